package io.kiln.gateway.impl;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.Tensor;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * The direct response writer against the Jackson generator it replaced (kept here as the oracle, as it was):
 * the same bytes for every datatype, the awkward floats (NaN, infinities, -0, subnormals, powers of two, random
 * bit patterns), strings needing escapes, parameters of every kind, and binary outputs; and the floats it
 * prints read back as the same float32.
 */
class InferResponseWriterTest {

  static final JsonFactory FACTORY = JsonFactory.builder().enable(StreamWriteFeature.USE_FAST_DOUBLE_WRITER).build();

  void assertSameAsJackson(InferenceResponse r, Predicate<String> binary) throws IOException {
    JsonResponseEncoder.Encoded actual = InferResponseWriter.write(r, binary);
    JsonResponseEncoder.Encoded expected = jackson(r, binary);
    assertThat(actual.body().toString(StandardCharsets.ISO_8859_1))
        .isEqualTo(expected.body().toString(StandardCharsets.ISO_8859_1));
    assertThat(actual.jsonLength()).isEqualTo(expected.jsonLength());
    assertThat(actual.binary()).isEqualTo(expected.binary());
  }

  static InferenceResponse response(Map<String, Object> params, Tensor... outputs) {
    return new InferenceResponse("req-1", "m", "1", List.of(outputs), params);
  }

  static byte[] raw(DataType type, int n, Random r) {
    byte[] b = new byte[n * type.byteSize()];
    r.nextBytes(b);
    if (type == DataType.BOOL) {
      for (int i = 0; i < n; i++) {
        b[i] = (byte) (b[i] & 1);
      }
    }
    return b;
  }

  @Test
  void everyFixedSizeDatatypeIsWrittenAsJacksonWroteIt() throws IOException {
    Random r = new Random(7);
    for (DataType type : DataType.values()) {
      if (type == DataType.BYTES) {
        continue;
      }
      for (int round = 0; round < 50; round++) {
        int n = 1 + r.nextInt(40);
        assertSameAsJackson(response(Map.of(), new Tensor("y", type, new long[] {1, n}, raw(type, n, r))), name -> false);
      }
    }
  }

  @Test
  void awkwardFloatsAreWrittenAsJacksonWroteThemAndReadBackExactly() throws IOException {
    List<Float> floats = new ArrayList<>(List.of(Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, -0f, 0f,
        Float.MIN_VALUE, -Float.MIN_VALUE, Float.MIN_NORMAL, Float.MAX_VALUE, 1f, 0.1f, 1e-3f, 9.999999e-4f, 1e7f,
        9999999f, 1.0E-4f, 2e-45f, 3.4028235e38f, 16777216f, 0.3f, 1f / 3));
    for (int e = -149; e < 128; e++) {
      floats.add((float) Math.scalb(1.0, e));
    }
    Random r = new Random(11);
    for (int i = 0; i < 20_000; i++) {
      floats.add(Float.intBitsToFloat(r.nextInt()));
    }
    ByteBuffer b = ByteBuffer.allocate(floats.size() * 4).order(ByteOrder.LITTLE_ENDIAN);
    floats.forEach(b::putFloat);
    Tensor t = new Tensor("y", DataType.FP32, new long[] {floats.size()}, b.array());
    assertSameAsJackson(response(Map.of(), t), name -> false);

    var data = new JsonObject(InferResponseWriter.write(response(Map.of(), t), name -> false).body())
        .getJsonArray("outputs").getJsonObject(0).getJsonArray("data");
    for (int i = 0; i < floats.size(); i++) {
      Object v = data.getValue(i);
      float back = v instanceof String s ? Float.parseFloat(s) : ((Number) v).floatValue();
      if (!Float.isNaN(floats.get(i))) {
        assertThat(Float.floatToIntBits(back)).as("element %d: %s", i, floats.get(i))
            .isEqualTo(Float.floatToIntBits(floats.get(i)));
      }
    }

    Random d = new Random(13);
    ByteBuffer doubles = ByteBuffer.allocate(8 * 2000).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < 2000; i++) {
      doubles.putDouble(i < 5 ? new double[] {Double.NaN, -0.0, Double.MIN_VALUE, Double.NEGATIVE_INFINITY, 1e23}[i]
          : Double.longBitsToDouble(d.nextLong()));
    }
    assertSameAsJackson(response(Map.of(), new Tensor("z", DataType.FP64, new long[] {2000}, doubles.array())), n -> false);
  }

  @Test
  void stringsNeedingEscapesAreWrittenAsJacksonWroteThem() throws IOException {
    List<byte[]> elements = List.of("plain".getBytes(StandardCharsets.UTF_8), new byte[0],
        "q\"uo\\te\n\t\u0001\u007f".getBytes(StandardCharsets.UTF_8), "\u00e9t\u00e9 \u4e2d \ud83d\ude00".getBytes(StandardCharsets.UTF_8),
        new byte[] {(byte) 0xff, (byte) 0xc3, 'a'});
    Tensor bytes = new Tensor("na\"me\u00e9", DataType.BYTES, new long[] {elements.size()},
        BinaryTensors.joinBytesElements(elements));
    Map<String, Object> params = new LinkedHashMap<>();
    params.put("kiln_node", "node-1");
    params.put("k\u00e9y\n", "v\u0000");
    params.put("int", 7);
    params.put("long", -9L);
    params.put("big", new BigInteger("123456789012345678901234567890"));
    params.put("double", 2.5);
    params.put("nan", Double.NaN);
    params.put("float", 0.1f);
    params.put("bool", true);
    params.put("other", List.of(1, 2));
    InferenceResponse r = new InferenceResponse("id \"1\"", "mod\u00e9l", "v\t2", List.of(bytes), params);
    assertSameAsJackson(r, name -> false);
    assertSameAsJackson(new InferenceResponse("", "m", "1", List.of(bytes), Map.of()), name -> false);
  }

  @Test
  void binaryOutputsFollowTheJsonAsJacksonWroteThem() throws IOException {
    Random r = new Random(3);
    Tensor a = new Tensor("a", DataType.FP32, new long[] {2, 3}, raw(DataType.FP32, 6, r));
    Tensor b = new Tensor("b", DataType.INT64, new long[] {4}, raw(DataType.INT64, 4, r));
    Tensor c = new Tensor("c", DataType.BYTES, new long[] {1}, BinaryTensors.joinBytesElements(List.of(new byte[] {1, 2})));
    InferenceResponse resp = response(Map.of("kiln_node", "n"), a, b, c);
    assertSameAsJackson(resp, Set.of("a", "c")::contains);
    assertSameAsJackson(resp, name -> true);
    assertSameAsJackson(response(Map.of(), a), name -> true);
  }

  // ------------------------------------------------------------------ the oracle: the Jackson encoder as it was

  static JsonResponseEncoder.Encoded jackson(InferenceResponse response, Predicate<String> binaryOutputs)
      throws IOException {
    List<byte[]> binaries = new ArrayList<>();
    byte[] json;
    try (ByteArrayBuilder out = new ByteArrayBuilder(); JsonGenerator g = FACTORY.createGenerator(out)) {
      g.writeStartObject();
      g.writeStringField("model_name", response.modelName());
      g.writeStringField("model_version", response.modelVersion());
      if (!response.id().isEmpty()) {
        g.writeStringField("id", response.id());
      }
      g.writeFieldName("parameters");
      JsonResponseEncoder.parameters(g, response.parameters());
      g.writeArrayFieldStart("outputs");
      for (Tensor t : response.outputs()) {
        g.writeStartObject();
        g.writeStringField("name", t.name());
        g.writeStringField("datatype", t.datatype().name());
        g.writeFieldName("shape");
        g.writeArray(t.shape(), 0, t.shape().length);
        if (binaryOutputs.test(t.name())) {
          g.writeObjectFieldStart("parameters");
          g.writeNumberField(Fields.BINARY_DATA_SIZE, t.data().length);
          g.writeEndObject();
          binaries.add(t.data());
        } else {
          g.writeFieldName("data");
          data(g, t);
        }
        g.writeEndObject();
      }
      g.writeEndArray();
      g.writeEndObject();
      g.flush();
      json = out.toByteArray();
    }
    if (binaries.isEmpty()) {
      return new JsonResponseEncoder.Encoded(Buffer.buffer(json), json.length, false);
    }
    Buffer body = Buffer.buffer().appendBytes(json);
    for (byte[] b : binaries) {
      body.appendBytes(b);
    }
    return new JsonResponseEncoder.Encoded(body, json.length, true);
  }

  private static void data(JsonGenerator g, Tensor t) throws IOException {
    DataType type = t.datatype();
    g.writeStartArray();
    if (type == DataType.BYTES) {
      for (byte[] e : BinaryTensors.splitBytesElements(t.data())) {
        g.writeString(new String(e, StandardCharsets.UTF_8));
      }
    } else {
      ByteBuffer in = ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN);
      long n = t.data().length / type.byteSize();
      for (long i = 0; i < n; i++) {
        switch (type) {
          case BOOL -> g.writeBoolean(in.get() != 0);
          case FP32 -> g.writeNumber(in.getFloat());
          case FP64 -> g.writeNumber(in.getDouble());
          case FP16, BF16 -> g.writeNumber((float) Elements.getFloat(in, type));
          case UINT64 -> {
            long v = in.getLong();
            if (v >= 0) {
              g.writeNumber(v);
            } else {
              g.writeNumber(Long.toUnsignedString(v));
            }
          }
          default -> g.writeNumber(Elements.getInteger(in, type));
        }
      }
    }
    g.writeEndArray();
  }
}
