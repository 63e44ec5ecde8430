package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.gateway.support.GatewayTestBase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Malformed and hostile infer requests, each answered with the right 4xx and a message naming the problem,
 * never reaching a pool, with the server serving normally after every one.
 */
class MalformedRequestTest extends GatewayTestBase {

  private static final String MLP = "/v2/models/mlp/infer";
  private static final String FP32 = "/v2/models/id_FP32/infer";
  private static final String GOOD_INPUT = "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4]}";

  record Case(String name, String path, Map<String, String> headers, Buffer body, int status, String message) {
    @Override
    public String toString() {
      return name;
    }
  }

  private static Case json(String name, String path, String body, int status, String message) {
    return new Case(name, path, Map.of(), Buffer.buffer(body), status, message);
  }

  private static Case mlpInput(String name, String input, String message) {
    return json(name, MLP, "{\"inputs\":[" + input + "]}", 400, message);
  }

  private static Case fp32(String name, String shape, String data, String message) {
    return json(name, FP32, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":" + shape + ",\"data\":" + data + "}]}",
        400, message);
  }

  private static Case typed(String name, String type, String data, String message) {
    int n = data.split(",").length;
    return json(name, "/v2/models/id_" + type + "/infer",
        "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"" + type + "\",\"shape\":[" + n + "],\"data\":" + data + "}]}", 400, message);
  }

  private static Case binary(String name, String path, String json, Buffer binary, String headerLength, String message) {
    return new Case(name, path, Map.of("Inference-Header-Content-Length", headerLength == null ? Integer.toString(json.length())
        : headerLength), Buffer.buffer(json).appendBuffer(binary), 400, message);
  }

  private static Buffer zeros(int n) {
    return Buffer.buffer(new byte[n]);
  }

  static List<Case> cases() {
    List<Case> c = new ArrayList<>();
    // Malformed JSON and wrong top-level structure.
    c.add(json("empty body", MLP, "", 400, "request body: must be a JSON object"));
    c.add(json("truncated JSON", MLP, "{\"inputs\":[" + GOOD_INPUT.substring(0, 30), 400, "malformed JSON"));
    c.add(json("not an object", MLP, "[1,2,3]", 400, "request body: must be a JSON object"));
    c.add(json("trailing content", MLP, "{\"inputs\":[" + GOOD_INPUT + "]} {}", 400, "after the JSON object"));
    c.add(json("not JSON at all", MLP, "inputs=1", 400, "malformed JSON"));
    c.add(json("duplicate key", MLP, "{\"inputs\":[" + GOOD_INPUT + "],\"inputs\":[]}", 400, "Duplicate field 'inputs'"));
    c.add(json("nesting too deep", MLP, "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":"
        + "[".repeat(100) + "]".repeat(100) + "}]}", 400, "request body: "));
    c.add(json("inputs missing", MLP, "{}", 400, "inputs: missing"));
    c.add(json("inputs not an array", MLP, "{\"inputs\":{}}", 400, "inputs: must be an array"));
    c.add(json("input not an object", MLP, "{\"inputs\":[1]}", 400, "inputs[0]: must be an object"));
    c.add(json("id not a string", MLP, "{\"id\":5,\"inputs\":[" + GOOD_INPUT + "]}", 400, "id: must be a string"));
    c.add(json("parameters not an object", MLP, "{\"parameters\":[],\"inputs\":[" + GOOD_INPUT + "]}", 400,
        "parameters: must be an object"));
    c.add(json("nested parameter", MLP, "{\"parameters\":{\"x\":{\"y\":1}},\"inputs\":[" + GOOD_INPUT + "]}", 400,
        "parameters.x: must be a string, number or boolean"));
    // Input fields.
    c.add(mlpInput("missing name", "{\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4]}", "inputs[0].name: missing"));
    c.add(mlpInput("name not a string", "{\"name\":7,\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4]}",
        "inputs[0].name: must be a string"));
    c.add(mlpInput("missing datatype", "{\"name\":\"input\",\"shape\":[1,4],\"data\":[1,2,3,4]}", "inputs[0].datatype: missing"));
    c.add(mlpInput("unknown datatype", "{\"name\":\"input\",\"datatype\":\"FP128\",\"shape\":[1,4],\"data\":[1,2,3,4]}",
        "inputs[0].datatype: unknown datatype 'FP128'"));
    c.add(mlpInput("wrong datatype", "{\"name\":\"input\",\"datatype\":\"INT32\",\"shape\":[1,4],\"data\":[1,2,3,4]}",
        "inputs[0].datatype: input 'input' is FP32, got INT32"));
    c.add(mlpInput("missing shape", "{\"name\":\"input\",\"datatype\":\"FP32\",\"data\":[1,2,3,4]}", "inputs[0].shape: missing"));
    c.add(mlpInput("shape not an array", "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":4,\"data\":[1,2,3,4]}",
        "inputs[0].shape: must be an array"));
    c.add(mlpInput("fractional dimension", "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2.5],\"data\":[1,2,3,4]}",
        "inputs[0].shape[1]: must be an integer"));
    c.add(mlpInput("negative dimension", "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[-1,4],\"data\":[1,2,3,4]}",
        "inputs[0].shape: dimensions must be >= 0"));
    c.add(mlpInput("dimension beyond a long", "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,99999999999999999999],"
        + "\"data\":[1]}", "inputs[0].shape[1]: 99999999999999999999 is too large"));
    c.add(fp32("product overflows a long", "[4294967296,4294967296]", "[1]", "inputs[0].shape: [4294967296, 4294967296] has too many elements"));
    c.add(fp32("10 GB tensor in a tiny body", "[2684354560]", "[1]", "declares 2684354560 elements, more than the"));
    c.add(mlpInput("wrong rank", "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[4],\"data\":[1,2,3,4]}",
        "inputs[0].shape: [4] does not match [-1, 4]"));
    c.add(mlpInput("fixed dimension mismatch", "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,5],\"data\":[1,2,3,4,5]}",
        "inputs[0].shape: [1, 5] does not match [-1, 4]"));
    c.add(mlpInput("batch over max_batch_size", "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[9,4],\"data\":["
        + "1,".repeat(35) + "1]}", "inputs[0].shape: batch size 9 exceeds max_batch_size 8"));
    // Data.
    c.add(mlpInput("too few elements", "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3]}",
        "inputs[0].data: has 3 elements but shape [1, 4] needs 4"));
    c.add(mlpInput("too many elements", "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4,5]}",
        "inputs[0].data: more than the 4 elements"));
    c.add(mlpInput("ragged nested data", "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[2,4],\"data\":[[1,2,3,4],[5,6,7]]}",
        "inputs[0].data: nested arrays at depth 1 have unequal lengths"));
    c.add(mlpInput("nested data of another shape", "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[2,4],"
        + "\"data\":[[1,2],[3,4],[5,6],[7,8]]}", "inputs[0].data: nested dimensions [4, 2] do not match shape [2, 4]"));
    c.add(mlpInput("arrays mixed with values", "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[2,4],"
        + "\"data\":[[1,2,3,4],5,6,7,8]}", "inputs[0].data: mixes arrays and values at depth 0"));
    c.add(mlpInput("data not an array", "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,1],\"data\":5}",
        "inputs[0].data: must be an array"));
    c.add(mlpInput("no data at all", "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4]}", "inputs[0].data: missing"));
    c.add(typed("string in FP32", "FP32", "[1,\"two\"]", "inputs[0].data element 1: expected a number for FP32"));
    c.add(typed("boolean in FP32", "FP32", "[true]", "inputs[0].data element 0: expected a number for FP32"));
    c.add(typed("fraction in INT32", "INT32", "[1,2.5]", "inputs[0].data element 1: expected an integer for INT32"));
    c.add(typed("INT8 out of range", "INT8", "[1,300]", "inputs[0].data element 1: 300 is out of range for INT8"));
    c.add(typed("negative UINT8", "UINT8", "[-1]", "-1 is out of range for UINT8"));
    c.add(typed("negative UINT64", "UINT64", "[-1]", "-1 is out of range for UINT64"));
    c.add(typed("UINT64 beyond 2^64", "UINT64", "[18446744073709551616]", "is out of range for UINT64"));
    c.add(typed("FP16 beyond its range", "FP16", "[70000]", "70000.0 is out of range for FP16"));
    c.add(typed("FP32 beyond its range", "FP32", "[1e39]", "1.0E39 is out of range for FP32"));
    c.add(typed("number in BOOL", "BOOL", "[1]", "expected true or false for BOOL"));
    c.add(typed("number in BYTES", "BYTES", "[1]", "expected a string for BYTES"));
    // Inputs as a set.
    c.add(json("missing input", "/v2/models/pair/infer", "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"INT32\",\"shape\":[1,2],"
        + "\"data\":[1,2]}]}", 400, "inputs: missing input 'b'"));
    c.add(json("duplicate input", MLP, "{\"inputs\":[" + GOOD_INPUT + "," + GOOD_INPUT + "]}", 400,
        "inputs[1].name: input 'input' given more than once"));
    c.add(mlpInput("unknown input", "{\"name\":\"bogus\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4]}",
        "inputs[0].name: model 'mlp' has no input 'bogus'"));
    // Outputs and parameters.
    c.add(json("unknown output", MLP, "{\"inputs\":[" + GOOD_INPUT + "],\"outputs\":[{\"name\":\"logits\"}]}", 400,
        "outputs[0].name: model 'mlp' has no output 'logits'"));
    c.add(json("duplicate output", MLP, "{\"inputs\":[" + GOOD_INPUT + "],\"outputs\":[{\"name\":\"output\"},{\"name\":\"output\"}]}",
        400, "outputs[1].name: output 'output' requested more than once"));
    c.add(json("classification output", MLP, "{\"inputs\":[" + GOOD_INPUT + "],\"outputs\":[{\"name\":\"output\","
        + "\"parameters\":{\"classification\":3}}]}", 400, "outputs[0].parameters.classification: not supported"));
    c.add(json("binary_data_output not a boolean", MLP, "{\"parameters\":{\"binary_data_output\":\"yes\"},\"inputs\":["
        + GOOD_INPUT + "]}", 400, "parameters.binary_data_output: must be a boolean"));
    c.add(json("negative timeout_ms", MLP, "{\"parameters\":{\"timeout_ms\":-5},\"inputs\":[" + GOOD_INPUT + "]}", 400,
        "parameters.timeout_ms: must be a positive integer"));
    c.add(new Case("bad kiln-timeout-ms header", MLP, Map.of("kiln-timeout-ms", "soon"),
        Buffer.buffer("{\"inputs\":[" + GOOD_INPUT + "]}"), 400, "kiln-timeout-ms: must be a positive integer"));
    // Binary tensor extension.
    String bin16 = "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"parameters\":{\"binary_data_size\":16}}]}";
    c.add(binary("header length not a number", MLP, bin16, zeros(16), "lots", "Inference-Header-Content-Length: must be a non-negative integer"));
    c.add(binary("header length past the body", MLP, bin16, zeros(16), "100000", "Inference-Header-Content-Length: 100000 is outside"));
    c.add(binary("negative header length", MLP, bin16, zeros(16), "-4", "Inference-Header-Content-Length: -4 is outside"));
    c.add(binary("header length cutting the JSON", MLP, bin16, zeros(16), "20", "malformed JSON"));
    c.add(binary("binary size disagrees with the shape", MLP, bin16.replace("16}", "12}"), zeros(12), null,
        "inputs[0].parameters.binary_data_size: 12 bytes, but FP32 shape [1, 4] needs 16"));
    c.add(binary("binary size past the body", MLP, bin16, zeros(8), null,
        "inputs[0].parameters.binary_data_size: 16 bytes, but only 8 bytes"));
    c.add(binary("bytes left over", MLP, bin16, zeros(20), null, "20 bytes follow the JSON header but the inputs' binary_data_size add up to 16"));
    c.add(binary("negative binary size", MLP, bin16.replace("16}", "-16}"), zeros(16), null,
        "inputs[0].parameters.binary_data_size: must be a non-negative integer"));
    c.add(binary("both data and binary", MLP, bin16.replace("}}]}", "},\"data\":[1,2,3,4]}]}"), zeros(16), null,
        "inputs[0]: has both data and parameters.binary_data_size"));
    c.add(binary("BYTES element overruns", "/v2/models/id_BYTES/infer",
        "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"BYTES\",\"shape\":[1],\"parameters\":{\"binary_data_size\":6}}]}",
        Buffer.buffer().appendIntLE(1000).appendBytes(new byte[2]), null, "BYTES element 0 claims 1000 bytes but only 2 remain"));
    c.add(json("binary size but no binary part", MLP, bin16, 400,
        "inputs[0].parameters.binary_data_size: 16 bytes, but only 0 bytes of binary data remain"));
    // Size and naming.
    c.add(new Case("body over the limit", MLP, Map.of(), Buffer.buffer(new byte[MAX_BODY + 1]), 413,
        "request body exceeds the limit of " + MAX_BODY + " bytes"));
    c.add(json("unknown model", "/v2/models/nope/infer", "{\"inputs\":[]}", 404, "model 'nope' not found"));
    c.add(json("unknown version", "/v2/models/mlp/versions/7/infer", "{\"inputs\":[" + GOOD_INPUT + "]}", 404,
        "model 'mlp' has no version '7'"));
    return c;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void answeredWithTheRightStatusAndMessage(Case c) {
    HttpResponse<Buffer> r = post(c.path(), c.body(), c.headers());
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(c.status());
    assertThat(r.getHeader("Content-Type")).isEqualTo("application/json");
    JsonObject body = r.bodyAsJsonObject();
    assertThat(body.fieldNames()).containsExactly("error");
    assertThat(body.getString("error")).contains(c.message());
    assertThat(cluster.sent).as("a malformed request must never reach a pool").isEmpty();

    HttpResponse<Buffer> ok = postJson(MLP, "{\"inputs\":[" + GOOD_INPUT + "]}");
    assertThat(ok.statusCode()).as("still serving after '%s'", c.name()).isEqualTo(200);
  }

  @Test
  void theTableIsBroad() {
    assertThat(cases()).hasSizeGreaterThanOrEqualTo(30);
    assertThat(cases().stream().map(Case::name).distinct()).hasSameSizeAs(cases());
  }
}
