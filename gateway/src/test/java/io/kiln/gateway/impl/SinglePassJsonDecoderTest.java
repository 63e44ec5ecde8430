package io.kiln.gateway.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.support.Mutator;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.Tensor;
import io.vertx.core.buffer.Buffer;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The single-pass JSON decoder against the two Jackson passes as the oracle: for every body, the gateway's
 * decoder (single pass, falling back to Jackson) and the Jackson-only decoder must agree exactly — the same
 * tensors, header and parameters when they accept, the same error message when they refuse. Seeded: fuzzed
 * bodies (the hostile-input fuzzer's seeds and mutator), generated numbers in every spelling JSON allows, and
 * the edge cases by name.
 */
@Tag("slow")
class SinglePassJsonDecoderTest {

  static final int MAX_BODY = 1 << 20;
  final Map<String, ModelInfo> models = HostileInputFuzzTest.models();
  final HttpInferDecoder fast = new HttpInferDecoder(new JsonRequestDecoder(MAX_BODY));
  final HttpInferDecoder jackson = new HttpInferDecoder(new JsonRequestDecoder(MAX_BODY), false);
  final SinglePassJsonDecoder singlePass = new SinglePassJsonDecoder();

  /** What a decoder made of a body: its tensors, header and outputs, or its error. */
  record Outcome(String error, List<Tensor> tensors, List<String> outputs, String id, Map<String, Object> parameters,
                 boolean rawInputs, String binaryOutputs) {
  }

  static Outcome outcome(HttpInferDecoder d, ModelInfo model, byte[] body, String headerLength) {
    try {
      DecodedRequest r = d.decode(model, body, headerLength);
      var req = r.request().request();
      StringBuilder binary = new StringBuilder();
      for (var o : model.outputs()) {
        binary.append(o.name()).append('=').append(r.header().binaryOutputs().test(o.name())).append(';');
      }
      return new Outcome(null, req.inputs(), req.outputs(), req.id(), req.parameters(), r.rawInputs(), binary.toString());
    } catch (InferenceException e) {
      return new Outcome(e.kind() + ": " + e.getMessage(), null, null, null, null, false, null);
    }
  }

  void assertSame(String model, String body) {
    assertSame(models.get(model), body.getBytes(StandardCharsets.UTF_8), null);
  }

  void assertSame(ModelInfo model, byte[] body, String headerLength) {
    Outcome expected = outcome(jackson, model, body, headerLength);
    Outcome actual = outcome(fast, model, body, headerLength);
    assertThat(actual).as("body %s", new String(body, StandardCharsets.UTF_8)).isEqualTo(expected);
  }

  /** The single pass read it itself (no fallback). */
  void assertFast(String body) {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    assertThat(singlePass.decode(b, 0, b.length)).as("single pass of %s", body).isNotNull();
  }

  @Test
  void fuzzedBodiesDecodeExactlyAsJacksonDoes() {
    Mutator m = new Mutator(20261201L);
    List<HostileInputFuzzTest.Seed> seeds = new ArrayList<>(HostileInputFuzzTest.JSON_SEEDS);
    seeds.addAll(HostileInputFuzzTest.BINARY_SEEDS);
    int fastOnes = 0;
    for (int i = 0; i < 6000; i++) {
      HostileInputFuzzTest.Seed seed = m.pick(seeds);
      byte[] body = i < seeds.size() ? seeds.get(i).body() : m.mutate(seed.body(), m.pick(seeds).body());
      ModelInfo model = models.get(m.nextInt(8) == 0 ? m.pick(List.copyOf(models.keySet())) : seed.model());
      assertSame(model, body, seed.headerLength());
      int json = seed.headerLength() == null ? body.length : Math.min(body.length, Integer.parseInt(seed.headerLength()));
      if (singlePass.decode(body, 0, json) != null) {
        fastOnes++;
      }
    }
    // The fast path must be the common one, not a rarely taken branch.
    assertThat(fastOnes).isGreaterThan(300);
  }

  static Stream<Arguments> edgeCases() {
    return Stream.of(
        // numbers
        Arguments.of("exponents", "id_FP32", "[1e3,1E-3,1.5e+2,-2.5E-0,0e0,1e38,3.4028235e38,1.4e-45,1e-46]"),
        Arguments.of("negative zero", "id_FP32", "[-0,-0.0,0.0,-0e5]"),
        Arguments.of("negative zero FP64", "id_FP64", "[-0,-0.0,-0E-7]"),
        Arguments.of("beyond FP32", "id_FP32", "[3.5e38]"),
        Arguments.of("beyond FP64 is infinite", "id_FP32", "[1e309,-1e309]"),
        Arguments.of("underflow", "id_FP64", "[1e-400,4.9e-324,2.4703282292062328e-324]"),
        Arguments.of("17+ digits", "id_FP64", "[0.30000000000000004,1.00000000000000011102230246251565,123456789012345678901234]"),
        Arguments.of("long integers for floats", "id_FP32", "[16777217,999999999999999999,1234567890123456789012]"),
        Arguments.of("NaN", "id_FP32", "[NaN]"),
        Arguments.of("Infinity", "id_FP32", "[Infinity]"),
        Arguments.of("-Infinity", "id_FP32", "[-Infinity]"),
        Arguments.of("leading zero", "id_FP32", "[01]"),
        Arguments.of("leading plus", "id_FP32", "[+1]"),
        Arguments.of("bare point", "id_FP32", "[1.]"),
        Arguments.of("point first", "id_FP32", "[.5]"),
        Arguments.of("empty exponent", "id_FP32", "[1e]"),
        Arguments.of("hex", "id_FP32", "[0x10]"),
        Arguments.of("trailing comma", "id_FP32", "[1,]"),
        Arguments.of("number glued to a word", "id_FP32", "[1x]"),
        Arguments.of("huge integer", "id_INT64", "[92233720368547758070]"),
        Arguments.of("19-digit long", "id_INT64", "[9223372036854775807,-9223372036854775808]"),
        Arguments.of("uint64 above long", "id_UINT64", "[18446744073709551615]"),
        Arguments.of("int out of range", "id_INT8", "[128]"),
        Arguments.of("float for an integer type", "id_INT32", "[1.0]"),
        Arguments.of("exponent for an integer type", "id_INT32", "[1e2]"),
        Arguments.of("bools", "id_BOOL", "[true,false]"),
        Arguments.of("bool glued", "id_BOOL", "[truex]"),
        Arguments.of("null element", "id_FP32", "[null]"),
        Arguments.of("FP16 range", "id_FP16", "[65504,65520,-1e-8]"),
        Arguments.of("BF16", "id_BF16", "[1,-2.5,3.0e38]"),
        Arguments.of("BYTES ascii", "id_BYTES", "[\"hello\",\"\",\"a b\"]"),
        Arguments.of("BYTES escaped", "id_BYTES", "[\"tab\\there\",\"\\u00e9\",\"q\\\"\"]"),
        Arguments.of("BYTES UTF-8", "id_BYTES", "[\"\u00e9t\u00e9\",\"\u4e2d\"]"),
        Arguments.of("BYTES control character", "id_BYTES", "[\"a\u0001b\"]"),
        Arguments.of("bare value for shape [1]", "id_FP32", "5"),
        Arguments.of("bare string for shape [1]", "id_BYTES", "\"s\""));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("edgeCases")
  void dataEdgeCasesDecodeExactlyAsJacksonDoes(String what, String model, String data) {
    int n = data.split(",", -1).length;
    assertSame(model, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"" + models.get(model).inputs().get(0).datatype()
        + "\",\"shape\":[" + n + "],\"data\":" + data + "}]}");
  }

  static Stream<Arguments> documents() {
    String in = "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4]}";
    return Stream.of(
        Arguments.of("plain", "{\"inputs\":[" + in + "]}"),
        Arguments.of("whitespace everywhere", " \t\r\n{ \"inputs\" :\n[ { \"name\" : \"input\" ,\t\"datatype\":\"FP32\" ,"
            + " \"shape\" : [ 1 , 4 ] , \"data\" : [ [ 1 , 2 , 3 , 4 ] ] } ] }\n\n"),
        Arguments.of("data before shape and datatype", "{\"inputs\":[{\"data\":[[1,2],[3,4]],\"name\":\"input\","
            + "\"shape\":[2,2],\"datatype\":\"FP32\"}]}"),
        Arguments.of("escaped name", "{\"inputs\":[{\"name\":\"in\\u0070ut\",\"datatype\":\"FP32\",\"shape\":[1,4],"
            + "\"data\":[1,2,3,4]}]}"),
        Arguments.of("escaped key", "{\"in\\u0070uts\":[" + in + "]}"),
        Arguments.of("non-ASCII id", "{\"id\":\"\u00e9\",\"inputs\":[" + in + "]}"),
        Arguments.of("duplicate top-level key", "{\"inputs\":[" + in + "],\"inputs\":[" + in + "]}"),
        Arguments.of("duplicate input key", "{\"inputs\":[{\"name\":\"input\",\"name\":\"input\",\"datatype\":\"FP32\","
            + "\"shape\":[1,4],\"data\":[1,2,3,4]}]}"),
        Arguments.of("duplicate unknown key", "{\"x\":1,\"x\":2,\"inputs\":[" + in + "]}"),
        Arguments.of("duplicate parameter", "{\"parameters\":{\"a\":1,\"a\":2},\"inputs\":[" + in + "]}"),
        Arguments.of("unknown members skipped", "{\"v\":[1,[2,\"s\"],true,null],\"inputs\":[{\"extra\":\"e\"," + in.substring(1)
            + "],\"more\":-1.5e3}"),
        Arguments.of("unknown object member", "{\"v\":{\"a\":{}},\"inputs\":[" + in + "]}"),
        Arguments.of("parameters of every kind", "{\"id\":\"r-1\",\"parameters\":{\"s\":\"v\",\"i\":-7,\"d\":2.5,\"b\":true,"
            + "\"big\":123456789012345678901,\"binary_data_output\":true},\"inputs\":[" + in + "]}"),
        Arguments.of("parameter of the wrong kind", "{\"parameters\":{\"binary_data_output\":1},\"inputs\":[" + in + "]}"),
        Arguments.of("null parameter", "{\"parameters\":{\"a\":null},\"inputs\":[" + in + "]}"),
        Arguments.of("outputs", "{\"inputs\":[" + in + "],\"outputs\":[{\"name\":\"output\",\"parameters\":"
            + "{\"binary_data\":true}}]}"),
        Arguments.of("unknown output", "{\"inputs\":[" + in + "],\"outputs\":[{\"name\":\"nope\"}]}"),
        Arguments.of("wrong input name", "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4]}]}"),
        Arguments.of("wrong datatype", "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"INT32\",\"shape\":[1,4],\"data\":[1,2,3,4]}]}"),
        Arguments.of("unknown datatype", "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP33\",\"shape\":[1,4],\"data\":[1,2,3,4]}]}"),
        Arguments.of("too few elements", "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3]}]}"),
        Arguments.of("too many elements", "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4,5]}]}"),
        Arguments.of("ragged nesting", "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[2,2],\"data\":[[1,2],[3]]}]}"),
        Arguments.of("nesting against the shape", "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[2,2],"
            + "\"data\":[[1,2,3,4]]}]}"),
        Arguments.of("mixed nesting", "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[2,2],\"data\":[[1,2],3,4]}]}"),
        Arguments.of("negative dimension", "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[-1,4],\"data\":[]}]}"),
        Arguments.of("huge shape", "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[4294967296,4294967296,4],"
            + "\"data\":[1]}]}"),
        Arguments.of("shape of 19 digits", "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1000000000000000000,4],"
            + "\"data\":[1]}]}"),
        Arguments.of("shape not integers", "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1.0,4],\"data\":[1,2,3,4]}]}"),
        Arguments.of("data not an array", "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":5}]}"),
        Arguments.of("id not a string", "{\"id\":5,\"inputs\":[" + in + "]}"),
        Arguments.of("no inputs", "{\"id\":\"a\"}"),
        Arguments.of("empty object", "{}"),
        Arguments.of("empty inputs", "{\"inputs\":[]}"),
        Arguments.of("not an object", "[" + in + "]"),
        Arguments.of("trailing content", "{\"inputs\":[" + in + "]} x"),
        Arguments.of("two documents", "{\"inputs\":[" + in + "]}{}"),
        Arguments.of("byte order mark", "\ufeff{\"inputs\":[" + in + "]}"),
        Arguments.of("empty body", ""),
        Arguments.of("comment", "{/* c */\"inputs\":[" + in + "]}"),
        Arguments.of("single quotes", "{'inputs':[" + in + "]}"),
        Arguments.of("deep nesting", "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":"
            + "[".repeat(70) + "1" + "]".repeat(70) + "}]}"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("documents")
  void documentEdgeCasesDecodeExactlyAsJacksonDoes(String what, String body) {
    assertSame("mlp", body);
  }

  static Stream<Arguments> scalarDocuments() {
    String audio = "{\"name\":\"audio\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4]}";
    String tag = "{\"name\":\"tag\",\"datatype\":\"BYTES\",\"shape\":[],\"data\":\"t\"}";
    java.util.function.Function<String, String> sr = data -> "{\"inputs\":[" + audio + ",{\"name\":\"sr\","
        + "\"datatype\":\"INT64\",\"shape\":[],\"data\":" + data + "}," + tag + "]}";
    return Stream.of(
        Arguments.of("bare", sr.apply("16000")),
        Arguments.of("one-element array", sr.apply("[16000]")),
        Arguments.of("nested one deeper", sr.apply("[[16000]]")),
        Arguments.of("no element", sr.apply("[]")),
        Arguments.of("two elements", sr.apply("[16000,8000]")),
        Arguments.of("bare null", sr.apply("null")),
        Arguments.of("bare object", sr.apply("{}")),
        Arguments.of("bare fraction", sr.apply("1.5")),
        Arguments.of("bare string for INT64", sr.apply("\"16000\"")),
        Arguments.of("bare beyond a long", sr.apply("92233720368547758070")),
        Arguments.of("bare string for BYTES", "{\"inputs\":[" + audio + ",{\"name\":\"sr\",\"datatype\":\"INT64\","
            + "\"shape\":[],\"data\":1}," + tag.replace("\"t\"", "\"\\u00e9t\\u00e9\"") + "]}"),
        Arguments.of("bare number for BYTES", sr.apply("1").replace("\"data\":\"t\"", "\"data\":7")),
        Arguments.of("bare data before its shape", "{\"inputs\":[" + audio + ",{\"data\":16000,\"name\":\"sr\","
            + "\"datatype\":\"INT64\",\"shape\":[]}," + tag + "]}"),
        Arguments.of("bare data for a shape of one element", "{\"inputs\":[" + audio + ",{\"name\":\"sr\","
            + "\"datatype\":\"INT64\",\"shape\":[1],\"data\":16000}," + tag + "]}"),
        Arguments.of("shape [1] for a scalar", sr.apply("[16000]").replace("\"shape\":[],\"data\":[16000]",
            "\"shape\":[1],\"data\":[16000]")),
        Arguments.of("shape [] for a batched input", sr.apply("1").replace("\"shape\":[1,4],\"data\":[1,2,3,4]",
            "\"shape\":[],\"data\":1")));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("scalarDocuments")
  void scalarsDecodeExactlyAsJacksonDoes(String what, String body) {
    assertSame(TestModels.SCALARS, body);
  }

  @Test
  void aByteAbove0x7fAfterTheObjectIsContentNotTheEnd() {
    // The scanner read bytes signed: 0x80 peeked as a negative, which it took for the end of the body.
    byte[] json = "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4]}]}"
        .getBytes(StandardCharsets.UTF_8);
    for (int b : new int[] {0x80, 0xff, 0xc3}) {
      byte[] body = java.util.Arrays.copyOf(json, json.length + 1);
      body[json.length] = (byte) b;
      assertThat(singlePass.decode(body, 0, body.length)).isNull();
      assertSame(models.get("mlp"), body, null);
    }
  }

  @Test
  void aScalarsBareValueTakesTheSinglePass() {
    String body = "{\"inputs\":[{\"name\":\"audio\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4]},"
        + "{\"name\":\"sr\",\"datatype\":\"INT64\",\"shape\":[],\"data\":16000},"
        + "{\"name\":\"tag\",\"datatype\":\"BYTES\",\"shape\":[],\"data\":\"t\"}]}";
    assertFast(body);
    Outcome decoded = outcome(fast, models.get(TestModels.SCALARS), body.getBytes(StandardCharsets.UTF_8), null);
    assertThat(decoded.error()).isNull();
    assertThat(decoded.tensors().get(1)).isEqualTo(new Tensor("sr", DataType.INT64, new long[0],
        ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(16_000).array()));
    assertThat(decoded.tensors().get(2).byteElements()).singleElement()
        .satisfies(t -> assertThat(new String(t, StandardCharsets.UTF_8)).isEqualTo("t"));
    for (int n = 0; n < body.length(); n++) {
      assertSame(TestModels.SCALARS, body.substring(0, n));
    }
  }

  @Test
  void everyTruncationOfABodyDecodesExactlyAsJacksonDoes() {
    String body = "{\"id\":\"t\",\"parameters\":{\"p\":1.5},\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\","
        + "\"shape\":[2,4],\"data\":[[1.25,-2e-3,3,4],[5,6,7,8.5]]}],\"outputs\":[{\"name\":\"output\"}]}";
    for (int n = 0; n <= body.length(); n++) {
      assertSame("mlp", body.substring(0, n));
    }
  }

  @Test
  void generatedNumbersParseExactlyAsJacksonDoes() {
    Random r = new Random(42);
    for (DataType type : List.of(DataType.FP32, DataType.FP64, DataType.FP16, DataType.BF16)) {
      for (int round = 0; round < 200; round++) {
        StringBuilder data = new StringBuilder("[");
        int n = 16;
        for (int i = 0; i < n; i++) {
          data.append(i == 0 ? "" : ",").append(number(r));
        }
        data.append(']');
        assertSame("id_" + type.name(), "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"" + type + "\",\"shape\":[" + n
            + "],\"data\":" + data + "}]}");
      }
    }
  }

  /** A number in one of the spellings clients produce, valid JSON. */
  static String number(Random r) {
    double v = switch (r.nextInt(5)) {
      case 0 -> r.nextGaussian();
      case 1 -> Float.intBitsToFloat(r.nextInt());
      case 2 -> Double.longBitsToDouble(r.nextLong());
      case 3 -> r.nextInt(2000) - 1000;
      default -> (r.nextDouble() - 0.5) * Math.pow(10, r.nextInt(80) - 40);
    };
    if (!Double.isFinite(v)) {
      v = 1.5;
    }
    String s = switch (r.nextInt(6)) {
      case 0 -> Double.toString(v);
      case 1 -> Float.toString((float) v);
      case 2 -> String.format(Locale.ROOT, "%." + r.nextInt(12) + "f", v);
      case 3 -> String.format(Locale.ROOT, "%." + r.nextInt(20) + "e", v);
      case 4 -> new BigDecimal(v).toPlainString();
      default -> Long.toString((long) v);
    };
    return s.replace("Infinity", "1e400").replace("NaN", "0");
  }

  @Test
  void commonBodiesTakeTheSinglePass() {
    assertFast("{\"inputs\": [{\"name\": \"input\", \"datatype\": \"FP32\", \"shape\": [1, 5], \"data\": ["
        + "-0.5000, 0.4412, 1e-3, -0, 12]}]}");
    assertFast("{\"id\":\"a\",\"parameters\":{\"k\":1,\"s\":\"v\",\"b\":true},\"inputs\":[{\"name\":\"input\","
        + "\"datatype\":\"FP32\",\"shape\":[2,4],\"data\":[1,2,3,4,5,6,7,8.5]}],\"outputs\":[{\"name\":\"output\","
        + "\"parameters\":{\"binary_data\":true}}]}");
    assertFast("{\"inputs\":[{\"name\":\"b\",\"datatype\":\"BYTES\",\"shape\":[2],\"data\":[\"hello\",\"\"]},"
        + "{\"name\":\"a\",\"datatype\":\"INT32\",\"shape\":[1,2],\"data\":[[7,8]]}]}");
    assertFast("{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"parameters\":"
        + "{\"binary_data_size\":16}}]}");
  }

  @Test
  void aVertxBufferIsReadInPlaceAtItsOffset() {
    ModelInfo mlp = models.get(TestModels.MLP);
    byte[] json = "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4.5]}]}"
        .getBytes(StandardCharsets.UTF_8);
    // A slice of a larger buffer: the decoder must honour its offset and length.
    Buffer whole = Buffer.buffer("garbage").appendBytes(json).appendString("trailing");
    Buffer body = whole.slice(7, 7 + json.length);
    DecodedRequest r = fast.decode(mlp, body, null);
    ByteBuffer expected = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putFloat(1).putFloat(2).putFloat(3)
        .putFloat(4.5f);
    assertThat(r.request().request().inputs().get(0).data()).isEqualTo(expected.array());
    assertThat(outcome(fast, mlp, json, null)).isEqualTo(outcome(jackson, mlp, json, null));
  }
}
