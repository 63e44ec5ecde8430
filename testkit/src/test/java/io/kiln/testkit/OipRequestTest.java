package io.kiln.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.protocol.grpc.ModelInferRequest;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class OipRequestTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void jsonCarriesIdInputsParametersAndOutputs() throws Exception {
    String body = OipRequest.fp32("x", new long[] {1, 2}, 1.5f, -2f).id("r1").parameter("chunks", 3)
        .outputs("y").json();
    JsonNode root = JSON.readTree(body);
    assertThat(root.path("id").asText()).isEqualTo("r1");
    JsonNode in = root.path("inputs").get(0);
    assertThat(in.path("name").asText()).isEqualTo("x");
    assertThat(in.path("datatype").asText()).isEqualTo("FP32");
    assertThat(in.path("shape").toString()).isEqualTo("[1,2]");
    assertThat(in.path("data").get(0).floatValue()).isEqualTo(1.5f);
    assertThat(in.path("data").get(1).floatValue()).isEqualTo(-2f);
    assertThat(root.path("parameters").path("chunks").asInt()).isEqualTo(3);
    assertThat(root.path("outputs").get(0).path("name").asText()).isEqualTo("y");
  }

  @Test
  void binaryPutsEachInputRawAfterTheHeaderItsLengthNames() throws Exception {
    OipRequest.Binary b = OipRequest.create().input(OipRequest.Input.fp32("x", new long[] {2}, 1f, 2f))
        .input(OipRequest.Input.bytes("t", new long[] {1}, "hé")).binary();
    JsonNode header = JSON.readTree(Arrays.copyOf(b.body(), b.headerLength()));
    assertThat(header.path("inputs").get(0).path("parameters").path("binary_data_size").asInt()).isEqualTo(8);
    assertThat(header.path("inputs").get(1).path("parameters").path("binary_data_size").asInt()).isEqualTo(7);
    assertThat(header.path("inputs").get(0).has("data")).isFalse();
    ByteBuffer rest = ByteBuffer.wrap(b.body(), b.headerLength(), b.body().length - b.headerLength())
        .order(ByteOrder.LITTLE_ENDIAN);
    assertThat(rest.getFloat()).isEqualTo(1f);
    assertThat(rest.getFloat()).isEqualTo(2f);
    assertThat(rest.getInt()).isEqualTo(3);
    byte[] s = new byte[3];
    rest.get(s);
    assertThat(new String(s, StandardCharsets.UTF_8)).isEqualTo("hé");
    assertThat(rest.hasRemaining()).isFalse();
  }

  @Test
  void grpcTypedAndRawCarryTheSameTensors() {
    OipRequest r = OipRequest.create().id("g").input(OipRequest.Input.int64("n", new long[] {1, 2}, 7, -1))
        .parameter("flag", true);
    ModelInferRequest typed = r.grpc("m");
    assertThat(typed.getModelName()).isEqualTo("m");
    assertThat(typed.getId()).isEqualTo("g");
    assertThat(typed.getInputs(0).getShapeList()).containsExactly(1L, 2L);
    assertThat(typed.getInputs(0).getContents().getInt64ContentsList()).containsExactly(7L, -1L);
    assertThat(typed.getParametersOrThrow("flag").getBoolParam()).isTrue();
    ModelInferRequest raw = r.grpcRaw("m");
    ByteBuffer b = raw.getRawInputContents(0).asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
    assertThat(b.getLong()).isEqualTo(7L);
    assertThat(b.getLong()).isEqualTo(-1L);
    assertThat(raw.getInputs(0).hasContents()).isFalse();
  }
}
