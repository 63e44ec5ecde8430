package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.kiln.loadtest.impl.H2loadOutput;
import io.kiln.protocol.grpc.ModelInferRequest;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** h2load's output as recorded on this machine (nghttp2 1.52, against BareGrpcServer), and the body it posts. */
class H2loadOutputTest {

  static String recorded(String name) throws IOException {
    try (InputStream in = H2loadOutputTest.class.getResourceAsStream("/h2load/" + name)) {
      if (in == null) {
        throw new IOException("no test resource /h2load/" + name);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void readsRateCountsAndMeanOfATimedRun() throws IOException {
    H2loadOutput h = H2loadOutput.parse(recorded("bare-grpc-c16.txt"));
    assertThat(h.requestsPerSecond()).isEqualTo(10250.67);
    assertThat(h.seconds()).isEqualTo(4.0);
    assertThat(h.done()).isEqualTo(30752);
    assertThat(h.succeeded()).isEqualTo(30752);
    assertThat(h.errors()).isZero();
    assertThat(h.meanMs()).isCloseTo(1.64, within(1e-9));
  }

  @Test
  void aRunThatReachedNoServerIsRefused() {
    assertThatThrownBy(() -> H2loadOutput.parse(recorded("refused.txt"))).hasMessageContaining("did no request");
    assertThatThrownBy(() -> H2loadOutput.parse("")).hasMessageContaining("not the output of a finished h2load run");
  }

  @Test
  void countsNon2xxAndFailuresAsErrors() throws IOException {
    String text = recorded("bare-grpc-c16.txt")
        .replace("30752 succeeded, 0 failed, 0 errored, 0 timeout", "30740 succeeded, 10 failed, 1 errored, 1 timeout")
        .replace("30752 2xx, 0 3xx, 0 4xx, 0 5xx", "30740 2xx, 0 3xx, 0 4xx, 12 5xx");
    assertThat(H2loadOutput.parse(text).errors()).isEqualTo(24);
  }

  @Test
  void theGrpcBodyIsTheFramedRequestOfTheJsonTensor() throws Exception {
    float[] values = {0.5f, -1.25f, 3f, 0f};
    RequestTemplate json = RequestTemplate.fromJson("t", ("{\"inputs\": [{\"name\": \"input\", \"datatype\": \"FP32\","
        + " \"shape\": [1, 4], \"data\": [0.5, -1.25, 3, 0]}]}").getBytes(StandardCharsets.UTF_8));
    byte[] framed = GrpcRequestFile.framed("mlp", json);
    ByteBuffer b = ByteBuffer.wrap(framed);
    assertThat(b.get()).isZero();
    int length = b.getInt();
    assertThat(length).isEqualTo(framed.length - 5);
    ModelInferRequest r = ModelInferRequest.parseFrom(Arrays.copyOfRange(framed, 5, framed.length));
    assertThat(r.getModelName()).isEqualTo("mlp");
    assertThat(r.getInputs(0).getName()).isEqualTo("input");
    assertThat(r.getInputs(0).getShapeList()).containsExactly(1L, 4L);
    ByteBuffer raw = r.getRawInputContents(0).asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
    for (float v : values) {
      assertThat(raw.getFloat()).isEqualTo(v);
    }
  }
}
