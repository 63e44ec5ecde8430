package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Warm-up samples: OIP JSON requests read with every datatype, flat or nested, into the protocol's raw bytes; a file
 * that does not parse, does not fit the signature or is too big is skipped naming the file and the field.
 */
class WarmupSamplesTest {

  private static InferenceRequest read(String json) throws IOException {
    return JsonRequestReader.read(new ByteArrayInputStream(json.getBytes(StandardCharsets.UTF_8)));
  }

  private static byte[] bytes(int... values) {
    byte[] b = new byte[values.length];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) values[i];
    }
    return b;
  }

  @Test
  void everyDatatypeReadsIntoTheProtocolsLittleEndianBytes() throws IOException {
    InferenceRequest r = read("""
        {"id": "r1", "inputs": [
          {"name": "b", "datatype": "BOOL", "shape": [1, 2], "data": [true, false]},
          {"name": "u8", "datatype": "UINT8", "shape": [1, 2], "data": [0, 255]},
          {"name": "u16", "datatype": "UINT16", "shape": [1, 1], "data": [65535]},
          {"name": "u32", "datatype": "UINT32", "shape": [1, 1], "data": [4294967295]},
          {"name": "u64", "datatype": "UINT64", "shape": [1, 1], "data": [18446744073709551615]},
          {"name": "i8", "datatype": "INT8", "shape": [1, 2], "data": [-128, 127]},
          {"name": "i16", "datatype": "INT16", "shape": [1, 1], "data": [-2]},
          {"name": "i32", "datatype": "INT32", "shape": [1, 1], "data": [-2147483648]},
          {"name": "i64", "datatype": "INT64", "shape": [1, 1], "data": [-9223372036854775808]},
          {"name": "f16", "datatype": "FP16", "shape": [1, 2], "data": [1.5, -2]},
          {"name": "bf16", "datatype": "BF16", "shape": [1, 1], "data": [1]},
          {"name": "f32", "datatype": "FP32", "shape": [2, 2], "data": [[1, 2], [3, 4.5]]},
          {"data": [0.1], "shape": [1, 1], "datatype": "FP64", "name": "f64"},
          {"name": "s", "datatype": "BYTES", "shape": [1, 2], "data": [["kiln", "é"]], "parameters": {"x": 1}}
        ], "outputs": [{"name": "y", "parameters": {"binary_data": false}}],
        "parameters": {"text": "x", "n": 3, "f": 0.5, "t": true}}
        """);

    assertThat(r.id()).isEqualTo("r1");
    assertThat(r.outputs()).containsExactly("y");
    assertThat(r.parameters()).isEqualTo(Map.of("text", "x", "n", 3L, "f", 0.5, "t", true));
    List<Tensor> in = r.inputs();
    assertThat(in).extracting(Tensor::datatype).containsExactly(DataType.BOOL, DataType.UINT8, DataType.UINT16,
        DataType.UINT32, DataType.UINT64, DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64, DataType.FP16,
        DataType.BF16, DataType.FP32, DataType.FP64, DataType.BYTES);
    assertThat(in.get(0).data()).containsExactly(1, 0);
    assertThat(in.get(1).data()).containsExactly(bytes(0, 0xff));
    assertThat(in.get(2).data()).containsExactly(bytes(0xff, 0xff));
    assertThat(in.get(3).data()).containsExactly(bytes(0xff, 0xff, 0xff, 0xff));
    assertThat(in.get(4).data()).containsExactly(bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff));
    assertThat(in.get(5).data()).containsExactly(bytes(0x80, 0x7f));
    assertThat(in.get(6).data()).containsExactly(bytes(0xfe, 0xff));
    assertThat(in.get(7).data()).containsExactly(bytes(0, 0, 0, 0x80));
    assertThat(in.get(8).data()).containsExactly(bytes(0, 0, 0, 0, 0, 0, 0, 0x80));
    assertThat(in.get(9).data()).as("FP16 1.5 = 0x3e00, -2 = 0xc000").containsExactly(bytes(0, 0x3e, 0, 0xc0));
    assertThat(in.get(10).data()).as("BF16 1 = 0x3f80").containsExactly(bytes(0x80, 0x3f));
    assertThat(in.get(11).shape()).containsExactly(2, 2);
    assertThat(in.get(11).asFloats()).containsExactly(1f, 2f, 3f, 4.5f);
    assertThat(in.get(12).name()).as("data before its datatype and shape").isEqualTo("f64");
    assertThat(java.nio.ByteBuffer.wrap(in.get(12).data()).order(java.nio.ByteOrder.LITTLE_ENDIAN).getDouble())
        .isEqualTo(0.1);
    assertThat(in.get(13).byteElements()).containsExactly("kiln".getBytes(StandardCharsets.UTF_8),
        "é".getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void whatDoesNotFitTheProtocolIsRefusedNamingTheField() {
    Map<String, String> refused = new java.util.LinkedHashMap<>();
    refused.put(input("INT8", "[1, 1]", "[128]"), "inputs[0].data: element 0 (128) is out of INT8's range -128..127");
    refused.put(input("UINT64", "[1, 1]", "[-1]"), "inputs[0].data: element 0 (-1) is out of UINT64's range");
    refused.put(input("FP32", "[1, 2]", "[1, \"a\"]"), "inputs[0].data: element 1 is \"a\", not a number (FP32)");
    refused.put(input("FP16", "[1, 1]", "[70000]"), "inputs[0].data: element 0 (70000) is out of FP16's range");
    refused.put(input("BOOL", "[1, 1]", "[1]"), "inputs[0].data: element 0 is 1, not a boolean (true or false)");
    refused.put(input("INT32", "[1, 1]", "[1.5]"), "inputs[0].data: element 0 is 1.5, not an integer (INT32)");
    refused.put(input("BYTES", "[1, 1]", "[7]"), "inputs[0].data: element 0 is 7, not a string");
    refused.put(input("FP32", "[2, 2]", "[[1, 2], [3]]"), "inputs[0].data: ragged: arrays at depth 1 hold 2 and 1");
    refused.put(input("FP32", "[2, 1]", "[[1, 2]]"), "inputs[0].data: nested as [1, 2], not as the shape [2, 1]");
    refused.put(input("FP32", "[1, 2]", "[1, 2, 3]"), "inputs[0].data: more elements than the shape's 2");
    refused.put(input("FP32", "[1, 2]", "[1]"), "inputs[0].data: 1 elements, but shape [1, 2] holds 2");
    refused.put(input("FP32", "[1, 2]", "[[[1, 2]]]"), "inputs[0].data: nested deeper than the shape's 2 dimensions");
    refused.put(input("FLOAT", "[1, 1]", "[1]"), "inputs[0].datatype: 'FLOAT' is no datatype of the protocol");
    refused.put(input("FP32", "[1, -1]", "[1]"), "inputs[0].shape: dimension 1 is -1, not a count");
    refused.put("{\"inputs\": [{\"name\": \"x\", \"datatype\": \"FP32\", \"data\": [1]}]}", "inputs[0].shape: missing");
    refused.put("{\"inputs\": [{\"name\": \"x\", \"datatype\": \"FP32\", \"shape\": [1],"
        + " \"parameters\": {\"binary_data_size\": 4}}]}", "inputs[0].parameters: binary_data_size points at binary data");
    refused.put("{\"input\": []}", "input: not a field of an inference request (id, inputs, outputs, parameters)");
    refused.put("{\"inputs\": []}", "inputs: missing; a request has at least one input");
    refused.put("[1]", "the request must be a JSON object");
    refused.put("{\"inputs\": [", "not valid JSON: ");
    refused.forEach((json, message) -> assertThatThrownBy(() -> read(json)).as(json)
        .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith(message));
  }

  private static String input(String datatype, String shape, String data) {
    return "{\"inputs\": [{\"name\": \"x\", \"datatype\": \"" + datatype + "\", \"shape\": " + shape + ", \"data\": "
        + data + "}]}";
  }

  /** An ONNX-engine spec of {@code dir}: x FP32 [-1, 2], t BYTES [-1]. */
  private static ModelSpec spec(Path dir) {
    return ModelSpec.builder().uri(dir).engine(ModelSpec.ENGINE_ONNX).input("x", DataType.FP32, -1, 2)
        .input("t", DataType.BYTES, -1).output("y", DataType.FP32, -1, 2).build();
  }

  @Test
  void samplesAreTheFoldersJsonFilesThatFitTheSignatureInNameOrder(@TempDir Path dir) throws IOException {
    assertThat(WarmupSamples.read(spec(dir))).as("no warmup/ folder").isEqualTo(WarmupSamples.Found.NONE);
    Path warmup = Files.createDirectories(dir.resolve("warmup"));
    assertThat(WarmupSamples.read(spec(dir)).problems()).containsExactly("warm-up folder warmup/ holds no .json request"
        + " file; warming with synthetic zeros");

    String x = "{\"name\": \"x\", \"datatype\": \"FP32\", \"shape\": [2, 2], \"data\": [[1, 2], [3, 4]]}";
    String t = "{\"name\": \"t\", \"datatype\": \"BYTES\", \"shape\": [2], \"data\": [\"a\", \"b\"]}";
    Files.writeString(warmup.resolve("b.json"), "{\"inputs\": [" + x + ", " + t + "]}");
    Files.writeString(warmup.resolve("a.json"), "{\"inputs\": [" + t + ", " + x + "]}");
    Files.writeString(warmup.resolve("README.txt"), "not a sample");
    Files.writeString(warmup.resolve("c-missing.json"), "{\"inputs\": [" + x + "]}");
    Files.writeString(warmup.resolve("d-shape.json"), "{\"inputs\": [" + x.replace("[2, 2]", "[1, 4]")
        .replace("[[1, 2], [3, 4]]", "[1, 2, 3, 4]") + ", " + t.replace("[2]", "[1]").replace(", \"b\"", "") + "]}");
    Files.writeString(warmup.resolve("e-rows.json"), "{\"inputs\": [" + x + ", " + t.replace("[2]", "[1]")
        .replace(", \"b\"", "") + "]}");
    Files.writeString(warmup.resolve("f-extra.json"), "{\"inputs\": [" + x + ", " + t + ", " + x.replace("\"x\"",
        "\"z\"") + "]}");
    try (RandomAccessFile big = new RandomAccessFile(warmup.resolve("g-big.json").toFile(), "rw")) {
      big.setLength(WarmupSamples.MAX_FILE_BYTES + 1);
    }

    WarmupSamples.Found found = WarmupSamples.read(spec(dir));

    assertThat(found.samples()).extracting(WarmupSamples.Sample::name).containsExactly("warmup/a.json", "warmup/b.json");
    assertThat(found.samples().get(0).request().inputs()).extracting(Tensor::name).containsExactly("t", "x");
    String model = dir.getFileName().toString();
    assertThat(found.problems()).containsExactly(
        "warm-up sample warmup/c-missing.json skipped: inputs: missing input 't' of model '" + model + "'",
        "warm-up sample warmup/d-shape.json skipped: inputs[0].shape: [1, 4] does not match [-1, 2] of input 'x'",
        "warm-up sample warmup/e-rows.json skipped: inputs disagree on the batch size (first dimension): 'x' has 2,"
            + " 't' has 1",
        "warm-up sample warmup/f-extra.json skipped: inputs[2].name: model '" + model + "' has no input 'z' (its"
            + " inputs: [x, t])",
        "warm-up sample warmup/g-big.json skipped: 67108865 bytes, over the 64 MiB a warm-up sample may have");
  }

  @Test
  void aModelWhoseUriIsAFileOrABuiltinHasNoSamples(@TempDir Path dir) throws IOException {
    Path file = Files.writeString(dir.resolve("model.onnx"), "x");
    Files.createDirectories(dir.resolve("warmup"));
    assertThat(WarmupSamples.read(spec(dir).toBuilder().uri(file).build())).isEqualTo(WarmupSamples.Found.NONE);
    assertThat(WarmupSamples.read(ModelSpec.builder().uri("builtin:identity").engine(ModelSpec.ENGINE_BUILTIN)
        .input("x", DataType.FP32, -1, 2).build())).isEqualTo(WarmupSamples.Found.NONE);
  }
}
