package io.kiln.gateway.impl;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.kiln.gateway.ModelInfo;
import io.kiln.protocol.grpc.InferParameter;
import io.kiln.protocol.grpc.InferTensorContents;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferRequest.InferInputTensor;
import io.kiln.gateway.support.Figures;
import io.kiln.gateway.support.Mutator;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A seeded fuzzer over the gateway's request decoders, in-process: OIP JSON bodies, JSON + binary tensor
 * extension bodies (with hostile {@code Inference-Header-Content-Length} values) and gRPC
 * {@code ModelInferRequest}s (mutated wire bytes and structurally random messages). For every input the
 * decoder either succeeds or throws {@link InferenceException} INVALID_INPUT: nothing else escapes (anything
 * else would be a 500), and the bytes it allocates stay within a small multiple of the input, so a tiny body
 * that declares a huge tensor is refused before anything is allocated.
 *
 * <p>Each decoder (JSON, binary, gRPC) gets its own count of inputs: CI runs {@value #CI_ITERATIONS} each; {@code -Dkiln.reliability.fuzz.iterations=N} and
 * {@code -Dkiln.reliability.fuzz.seed=S} run more or replay one ({@code reliability/run.sh fuzz}).
 */
@Tag("slow")
class HostileInputFuzzTest {

  static final int CI_ITERATIONS = 4000;
  static final long ITERATIONS = Figures.knob("fuzz.iterations", CI_ITERATIONS);
  static final long SEED = Figures.knob("fuzz.seed", 20261130L);
  static final int MAX_BODY = 1 << 20;
  /**
   * Allowed allocation: this many bytes per input byte (decoded tensors, and a string value read whole: ~14 seen),
   * plus a fixed allowance for parser buffers and messages (the largest: a field name at Jackson's 50,000-char
   * limit, ~1.6 MB of buffers).
   */
  static final long BYTES_PER_INPUT_BYTE = 24;
  static final long FIXED_ALLOWANCE = 2L << 20;

  static final com.sun.management.ThreadMXBean THREADS =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  final Map<String, ModelInfo> models = models();
  final HttpInferDecoder decoder = new HttpInferDecoder(new JsonRequestDecoder(MAX_BODY));

  static Map<String, ModelInfo> models() {
    Map<String, ModelInfo> m = new java.util.HashMap<>();
    List<ModelInfo> all = new ArrayList<>(TestModels.all());
    all.addAll(TestModels.scalars());
    for (ModelInfo info : all) {
      m.put(info.name(), info); // the last version wins, like the directory's serving version
    }
    return m;
  }

  /** A body for the model at {@code model}; {@code headerLength} null for all-JSON. */
  record Seed(String model, byte[] body, String headerLength) {
  }

  static final List<Seed> JSON_SEEDS = List.of(
      json("mlp", "{\"id\":\"a\",\"parameters\":{\"k\":1,\"s\":\"v\",\"b\":true},\"inputs\":[{\"name\":\"input\","
          + "\"datatype\":\"FP32\",\"shape\":[2,4],\"data\":[1,2,3,4,5,6,7,8.5]}],\"outputs\":[{\"name\":\"output\","
          + "\"parameters\":{\"binary_data\":true}}]}"),
      json("mlp", "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[[1,2,3,4]]}]}"),
      json("pair", "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"INT32\",\"shape\":[1,2],\"data\":[7,8]},"
          + "{\"name\":\"b\",\"datatype\":\"BYTES\",\"shape\":[2],\"data\":[\"hello\",\"\"]}]}"),
      json("id_FP16", "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP16\",\"shape\":[3],\"data\":[1.5,-2,65504]}]}"),
      json("id_BOOL", "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"BOOL\",\"shape\":[2],\"data\":[true,false]}]}"),
      json("id_INT64", "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"INT64\",\"shape\":[2],\"data\":[-9223372036854775808,1]}]}"),
      json("id_UINT8", "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"UINT8\",\"shape\":[3],\"data\":[0,128,255]}]}"),
      json("id_FP64", "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP64\",\"shape\":[2],\"data\":[1e300,-0.5]}]}"),
      json("id_BYTES", "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"BYTES\",\"shape\":[1],\"data\":[\"\\u00e9t\\u00e9\"]}]}"),
      json("vad", "{\"inputs\":[{\"name\":\"audio\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4]},"
          + "{\"name\":\"sr\",\"datatype\":\"INT64\",\"shape\":[],\"data\":16000},"
          + "{\"name\":\"tag\",\"datatype\":\"BYTES\",\"shape\":[],\"data\":[\"a\"]}]}"));

  static final List<Seed> BINARY_SEEDS = List.of(
      binary("mlp", "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],"
          + "\"parameters\":{\"binary_data_size\":16}}],\"outputs\":[{\"name\":\"output\"}]}", new byte[16]),
      binary("pair", "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"INT32\",\"shape\":[1,2],\"parameters\":"
          + "{\"binary_data_size\":8}},{\"name\":\"b\",\"datatype\":\"BYTES\",\"shape\":[1],\"parameters\":"
          + "{\"binary_data_size\":7}}]}", new byte[] {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 'a', 'b', 'c'}),
      binary("id_INT16", "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"INT16\",\"shape\":[2],\"parameters\":"
          + "{\"binary_data_size\":4}}]}", new byte[] {1, 2, 3, 4}));

  static Seed json(String model, String body) {
    return new Seed(model, body.getBytes(StandardCharsets.UTF_8), null);
  }

  static Seed binary(String model, String header, byte[] data) {
    byte[] h = header.getBytes(StandardCharsets.UTF_8);
    byte[] body = new byte[h.length + data.length];
    System.arraycopy(h, 0, body, 0, h.length);
    System.arraycopy(data, 0, body, h.length, data.length);
    return new Seed(model, body, Integer.toString(h.length));
  }

  /** What happened to one input: accepted, refused cleanly, or a problem (an escape or an over-allocation). */
  record Outcome(boolean accepted, long allocated, String escaped, String overAllocated) {
  }

  /** Tallies of one decoder's run: every input counted in exactly one of accepted, refused, escaped, over-allocated. */
  static final class Tally {
    final String name;
    long inputs;
    long accepted;
    long refused;
    long escaped;
    long overAllocated;
    long maxAllocated;
    double maxRatio;
    long inputBytes;
    final List<String> problems = new ArrayList<>();

    Tally(String name) {
      this.name = name;
    }

    void add(Outcome o, int inputLength) {
      inputs++;
      inputBytes += inputLength;
      if (o.escaped != null) {
        escaped++;
        problem(o.escaped);
      } else if (o.overAllocated != null) {
        overAllocated++;
        problem(o.overAllocated);
      } else if (o.accepted) {
        accepted++;
      } else {
        refused++;
      }
      maxAllocated = Math.max(maxAllocated, o.allocated);
      double ratio = (double) Math.max(0, o.allocated - FIXED_ALLOWANCE) / Math.max(1, inputLength);
      maxRatio = Math.max(maxRatio, ratio);
    }

    private void problem(String what) {
      if (problems.size() < 10) {
        problems.add(what);
      }
    }

    Map<String, Object> figures() {
      Map<String, Object> f = new java.util.LinkedHashMap<>();
      f.put("inputs", inputs);
      f.put("accepted", accepted);
      f.put("refusedCleanly", refused);
      f.put("escaped", escaped);
      f.put("overAllocated", overAllocated);
      f.put("maxAllocatedBytes", maxAllocated);
      f.put("maxBytesPerInputByteAboveAllowance", Math.round(maxRatio * 10) / 10.0);
      if (!problems.isEmpty()) {
        f.put("problems", problems);
      }
      return f;
    }

    /** Fails the test unless every input was accepted or refused cleanly; call after writing the figures. */
    void assertClean() {
      assertThat(accepted + refused + escaped + overAllocated).isEqualTo(inputs);
      assertThat(escaped).as("%s inputs that escaped the decoder: %s", name, problems).isZero();
      assertThat(overAllocated).as("%s inputs that allocated beyond their bound: %s", name, problems).isZero();
    }
  }

  /**
   * Runs {@code decode} and classifies the outcome; a problem (anything but a value or INVALID_INPUT, or an
   * allocation beyond the bound) is described reproducibly and counted, and the test fails at the end.
   */
  static Outcome check(String what, long iteration, byte[] input, int inputLength, Supplier<Object> decode) {
    Outcome o = once(what, iteration, input, decode);
    long bound = BYTES_PER_INPUT_BYTE * inputLength + FIXED_ALLOWANCE;
    if (o.escaped() == null && o.allocated() > bound) {
      // The first input down a new path also pays for loading that path's classes: measure it again.
      o = once(what, iteration, input, decode);
      if (o.escaped() == null && o.allocated() > bound) {
        return new Outcome(o.accepted(), o.allocated(), null, describe(what, iteration, input) + " allocated "
            + o.allocated() + " bytes for a " + inputLength + "-byte input (bound " + bound + ")");
      }
    }
    return o;
  }

  private static Outcome once(String what, long iteration, byte[] input, Supplier<Object> decode) {
    long before = THREADS.getCurrentThreadAllocatedBytes();
    boolean accepted = false;
    String escaped = null;
    try {
      if (decode.get() == null) {
        escaped = describe(what, iteration, input) + " decoded to null";
      }
      accepted = true;
    } catch (InferenceException e) {
      if (e.kind() != InferenceException.Kind.INVALID_INPUT) {
        escaped = describe(what, iteration, input) + " was refused as " + e.kind() + ": " + e.getMessage();
      } else if (e.getMessage() == null || e.getMessage().isBlank()) {
        escaped = describe(what, iteration, input) + " was refused without a message";
      }
    } catch (Throwable t) {
      escaped = describe(what, iteration, input) + " escaped the decoder with " + t;
    }
    return new Outcome(accepted, THREADS.getCurrentThreadAllocatedBytes() - before, escaped, null);
  }

  static String describe(String what, long iteration, byte[] input) {
    String b64 = Base64.getEncoder().encodeToString(input.length > 1024 ? java.util.Arrays.copyOf(input, 1024) : input);
    return what + " input #" + iteration + " (seed " + SEED + ", " + input.length + " bytes, base64 " + b64 + ")";
  }

  /** First calls load classes and fill parser caches, which would count as the input's allocation. */
  void warmUp() {
    Mutator m = new Mutator(-SEED);
    for (int i = 0; i < 300; i++) {
      for (Seed s : m.nextInt(2) == 0 ? JSON_SEEDS : BINARY_SEEDS) {
        byte[] body = i == 0 ? s.body() : m.mutate(s.body(), s.body());
        try {
          decoder.decode(models.get(s.model()), body, s.headerLength());
        } catch (RuntimeException expected) {
          // warming the error paths too
        }
      }
    }
  }

  /**
   * {@value #CI_ITERATIONS} (or {@code fuzz.iterations}) inputs for each of the two HTTP decoders, the JSON one and
   * the binary-extension one, drawn from one seeded stream: each input is JSON or binary at random (1 in 3 binary)
   * until that decoder has its count, then the other decoder gets the rest.
   */
  @Test
  void jsonAndBinaryBodiesNeverEscapeTheDecoderNorAllocateBeyondTheirSize() {
    warmUp();
    Mutator m = new Mutator(SEED);
    Tally jsonTally = new Tally("json");
    Tally binaryTally = new Tally("binary");
    List<String> lengths = List.of("0", "1", "-1", "abc", "99999999999", "2147483648", " 5 ", "");
    for (long i = 0; jsonTally.inputs < ITERATIONS || binaryTally.inputs < ITERATIONS; i++) {
      boolean bin = jsonTally.inputs >= ITERATIONS || binaryTally.inputs < ITERATIONS && m.nextInt(3) == 0;
      List<Seed> seeds = bin ? BINARY_SEEDS : JSON_SEEDS;
      Seed seed = m.pick(seeds);
      byte[] body = m.mutate(seed.body(), m.pick(seeds).body());
      String headerLength = seed.headerLength();
      if (bin && m.nextInt(4) == 0) {
        headerLength = m.nextInt(2) == 0 ? m.pick(lengths) : Integer.toString(m.nextInt(body.length + 2));
      }
      // Now and then the body goes to another model than it was written for.
      ModelInfo model = models.get(m.nextInt(8) == 0 ? m.pick(List.copyOf(models.keySet())) : seed.model());
      String hl = headerLength;
      Outcome o = check(bin ? "binary" : "json", i, body, body.length, () -> decoder.decode(model, body, hl));
      (bin ? binaryTally : jsonTally).add(o, body.length);
    }
    new Figures("fuzz-http-decoders").put("seed", SEED).put("iterationsPerDecoder", ITERATIONS)
        .put("json", jsonTally.figures()).put("binary", binaryTally.figures()).write();
    jsonTally.assertClean();
    binaryTally.assertClean();
    assertThat(jsonTally.inputs).isEqualTo(ITERATIONS);
    assertThat(binaryTally.inputs).isEqualTo(ITERATIONS);
    assertThat(jsonTally.accepted).as("some mutants stay valid, so the accepting paths are exercised too").isPositive();
    assertThat(jsonTally.refused).isPositive();
    assertThat(binaryTally.refused).isPositive();
  }

  @Test
  void aTinyBodyCannotClaimAHugeTensor() {
    warmUp();
    ModelInfo fp32 = models.get("id_FP32");
    List<Seed> claims = List.of(
        json("id_FP32", "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2684354560],\"data\":[1]}]}"),
        json("id_FP32", "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[100000,100000],\"data\":[]}]}"),
        binary("id_FP32", "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2684354560],"
            + "\"parameters\":{\"binary_data_size\":10737418240}}]}", new byte[10]),
        binary("id_FP32", "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[-1],"
            + "\"parameters\":{\"binary_data_size\":10737418240}}]}", new byte[10]),
        json("id_BYTES", "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"BYTES\",\"shape\":[2147483647],\"data\":[\"a\"]}]}"));
    long i = 0;
    for (Seed s : claims) {
      ModelInfo model = models.get(s.model());
      Outcome o = check("claim", i++, s.body(), s.body().length, () -> decoder.decode(model, s.body(), s.headerLength()));
      assertThat(o.escaped()).isNull();
      assertThat(o.overAllocated()).isNull();
      assertThat(o.accepted()).isFalse();
      assertThat(o.allocated()).as("bytes allocated to refuse a 10 GB claim").isLessThan(64 * 1024);
    }
    assertThat(fp32).isNotNull();
  }

  /**
   * {@value #CI_ITERATIONS} (or {@code fuzz.iterations}) messages that reach Kiln's gRPC decoder: half mutated wire
   * bytes that protobuf still parses, half structurally random messages. Mutated wire bytes that protobuf refuses
   * to parse never reach Kiln's decoder (Vert.x's gRPC server refuses them); they are counted apart, not in the
   * decoder's count.
   */
  @Test
  void grpcRequestsNeverEscapeTheDecoderNorAllocateBeyondTheirSize() {
    Mutator m = new Mutator(SEED + 1);
    Tally wire = new Tally("grpc-wire");
    Tally structural = new Tally("grpc-structural");
    List<ModelInferRequest> seeds = grpcSeeds();
    long unparsable = 0;
    long parseEscaped = 0;
    List<String> parseProblems = new ArrayList<>();
    for (long i = 0; wire.inputs + structural.inputs < ITERATIONS; i++) {
      ModelInferRequest req;
      String model;
      byte[] bytes;
      boolean fromWire = m.nextInt(2) == 0;
      if (fromWire) {
        ModelInferRequest seed = m.pick(seeds);
        bytes = m.mutate(seed.toByteArray(), m.pick(seeds).toByteArray());
        try {
          req = ModelInferRequest.parseFrom(bytes); // Vert.x's gRPC server refuses what does not parse
        } catch (InvalidProtocolBufferException e) {
          unparsable++;
          continue;
        } catch (RuntimeException e) {
          parseEscaped++;
          if (parseProblems.size() < 10) {
            parseProblems.add(describe("grpc-parse", i, bytes) + " escaped protobuf's parser with " + e);
          }
          continue;
        }
        model = models.containsKey(req.getModelName()) ? req.getModelName() : seed.getModelName();
      } else {
        req = randomRequest(m);
        bytes = req.toByteArray();
        model = req.getModelName();
      }
      ModelInfo info = models.get(model);
      ModelInferRequest r = req;
      Outcome o = check(fromWire ? "grpc-wire" : "grpc-structural", i, bytes, bytes.length,
          () -> GrpcCodec.decode(r, info));
      (fromWire ? wire : structural).add(o, bytes.length);
    }
    Map<String, Object> refusedByProtobuf = new java.util.LinkedHashMap<>();
    refusedByProtobuf.put("inputs", unparsable + parseEscaped);
    refusedByProtobuf.put("refusedCleanly", unparsable);
    refusedByProtobuf.put("escaped", parseEscaped);
    if (!parseProblems.isEmpty()) {
      refusedByProtobuf.put("problems", parseProblems);
    }
    new Figures("fuzz-grpc-decoder").put("seed", SEED + 1).put("iterationsPerDecoder", ITERATIONS)
        .put("wire", wire.figures()).put("structural", structural.figures())
        .put("notParsedByProtobuf", refusedByProtobuf).write();
    wire.assertClean();
    structural.assertClean();
    assertThat(parseEscaped).as("wire inputs that escaped protobuf's parser: %s", parseProblems).isZero();
    assertThat(structural.refused).isPositive();
    assertThat(wire.inputs + structural.inputs).isEqualTo(ITERATIONS);
  }

  static List<ModelInferRequest> grpcSeeds() {
    return List.of(
        ModelInferRequest.newBuilder().setModelName("mlp").setId("x").addInputs(InferInputTensor.newBuilder()
            .setName("input").setDatatype("FP32").addShape(1).addShape(4)
            .setContents(InferTensorContents.newBuilder().addFp32Contents(1).addFp32Contents(2).addFp32Contents(3)
                .addFp32Contents(4))).build(),
        ModelInferRequest.newBuilder().setModelName("mlp").addInputs(InferInputTensor.newBuilder()
            .setName("input").setDatatype("FP32").addShape(1).addShape(4))
            .addRawInputContents(ByteString.copyFrom(new byte[16])).build(),
        ModelInferRequest.newBuilder().setModelName("pair")
            .addInputs(InferInputTensor.newBuilder().setName("a").setDatatype("INT32").addShape(1).addShape(2)
                .setContents(InferTensorContents.newBuilder().addIntContents(1).addIntContents(2)))
            .addInputs(InferInputTensor.newBuilder().setName("b").setDatatype("BYTES").addShape(1)
                .setContents(InferTensorContents.newBuilder().addBytesContents(ByteString.copyFromUtf8("hi"))))
            .putParameters("k", InferParameter.newBuilder().setInt64Param(5).build()).build(),
        ModelInferRequest.newBuilder().setModelName("vad")
            .addInputs(InferInputTensor.newBuilder().setName("audio").setDatatype("FP32").addShape(1).addShape(4)
                .setContents(InferTensorContents.newBuilder().addFp32Contents(1).addFp32Contents(2).addFp32Contents(3)
                    .addFp32Contents(4)))
            .addInputs(InferInputTensor.newBuilder().setName("sr").setDatatype("INT64")
                .setContents(InferTensorContents.newBuilder().addInt64Contents(16_000)))
            .addInputs(InferInputTensor.newBuilder().setName("tag").setDatatype("BYTES")
                .setContents(InferTensorContents.newBuilder().addBytesContents(ByteString.copyFromUtf8("t")))).build());
  }

  static ModelInferRequest randomRequest(Mutator m) {
    List<String> modelNames = List.of("mlp", "pair", "id_FP32", "id_BYTES", "id_FP16", "id_INT8", "id_BOOL", "vad");
    List<String> names = List.of("input", "a", "b", "x", "", "nope", "sr");
    List<String> types = new ArrayList<>(List.of("FP32", "INT32", "BYTES", "fp32", "", "TF32", "FP16", "BOOL", "INT8"));
    List<Long> dims = List.of(-1L, 0L, 1L, 2L, 4L, 3L, 1L << 31, Long.MAX_VALUE, 100_000L, -5L);
    ModelInferRequest.Builder b = ModelInferRequest.newBuilder().setModelName(m.pick(modelNames));
    int inputs = m.nextInt(4);
    boolean raw = m.nextInt(3) == 0;
    for (int i = 0; i < inputs; i++) {
      InferInputTensor.Builder t = InferInputTensor.newBuilder().setName(m.pick(names)).setDatatype(m.pick(types));
      for (int d = m.nextInt(4); d > 0; d--) {
        t.addShape(m.pick(dims));
      }
      if (!raw || m.nextInt(5) == 0) {
        InferTensorContents.Builder c = InferTensorContents.newBuilder();
        int n = m.nextInt(9);
        switch (m.nextInt(5)) {
          case 0 -> { for (int k = 0; k < n; k++) c.addFp32Contents(k); }
          case 1 -> { for (int k = 0; k < n; k++) c.addIntContents(-k); }
          case 2 -> { for (int k = 0; k < n; k++) c.addBytesContents(ByteString.copyFrom(new byte[m.nextInt(5)])); }
          case 3 -> { for (int k = 0; k < n; k++) c.addBoolContents(k % 2 == 0); }
          default -> { for (int k = 0; k < n; k++) c.addInt64Contents(Long.MIN_VALUE + k); }
        }
        t.setContents(c);
      }
      if (m.nextInt(6) == 0) {
        t.putParameters("binary_data_size", InferParameter.newBuilder().setInt64Param(m.pick(dims)).build());
      }
      b.addInputs(t);
    }
    if (raw) {
      for (int i = inputs + m.nextInt(3) - 1; i > 0; i--) {
        b.addRawInputContents(ByteString.copyFrom(new byte[m.nextInt(40)]));
      }
    }
    if (m.nextInt(4) == 0) {
      b.addOutputs(ModelInferRequest.InferRequestedOutputTensor.newBuilder().setName(m.pick(names))
          .putParameters("binary_data", InferParameter.newBuilder().setStringParam("yes").build()));
    }
    return b.build();
  }
}
