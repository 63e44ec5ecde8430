package io.kiln.deploy.e2e;

import io.kiln.testkit.OipRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;

/**
 * The repository's TorchScript MLP ({@code models/mlp}: input {@code input} FP32 [-1, 64], output
 * {@code output} FP32 [-1, 10]) with the input and torch's output recorded in its {@code expected.json}.
 */
final class MlpFixture {

  /** libtorch (DJL) and the torch that recorded the output may round the last bits differently. */
  static final double TOLERANCE = 1e-5;

  final long[] inputShape;
  final float[] input;
  final long[] outputShape;
  final float[] output;

  private MlpFixture(JsonObject expected) {
    JsonObject in = expected.getJsonObject("input");
    JsonObject out = expected.getJsonObject("output");
    inputShape = longs(in.getJsonArray("shape"));
    input = floats(in.getJsonArray("data"));
    outputShape = longs(out.getJsonArray("shape"));
    output = floats(out.getJsonArray("data"));
  }

  static MlpFixture load() {
    try {
      return new MlpFixture(new JsonObject(Files.readString(ServingCluster.repositoryRoot()
          .resolve("models/mlp/expected.json"))));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** An OIP inference request of the recorded input, with the given id. */
  OipRequest request(String id) {
    return OipRequest.fp32("input", inputShape, input).id(id);
  }

  /** {@link #request} as OIP JSON, with the given request parameters (null: none). */
  String jsonRequest(String id, JsonObject parameters) {
    OipRequest r = request(id);
    if (parameters != null) {
      for (var p : parameters) {
        r = r.parameter(p.getKey(), p.getValue());
      }
    }
    return r.json();
  }

  /** {@code actual} is torch's output for the fixture's input, element by element within {@link #TOLERANCE}. */
  void assertOutput(float[] actual) {
    org.assertj.core.api.Assertions.assertThat(actual).hasSize(output.length);
    for (int i = 0; i < actual.length; i++) {
      org.assertj.core.api.Assertions.assertThat((double) actual[i]).as("output[%d]", i)
          .isCloseTo(output[i], org.assertj.core.api.Assertions.within(TOLERANCE));
    }
  }

  static float[] floats(JsonArray a) {
    float[] out = new float[a.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = a.getNumber(i).floatValue();
    }
    return out;
  }

  private static long[] longs(JsonArray a) {
    long[] out = new long[a.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = a.getLong(i);
    }
    return out;
  }
}
