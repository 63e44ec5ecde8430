package io.kiln.loadtest;

import io.kiln.loadtest.impl.OipJson;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;

/**
 * One inference request the generator can send: the OIP JSON body as given (sent verbatim over
 * {@code http-json}) and its input tensors as raw bytes (sent by {@code http-binary} and {@code grpc}).
 * Immutable and safe to share between threads.
 */
public final class RequestTemplate {
  /** Largest request file or generated tensor accepted: a load generator should not be an OOM vector. */
  public static final long MAX_BYTES = 64L << 20;

  private final String label;
  private final byte[] json;
  private final List<TensorData> inputs;
  private final String rawUnavailable;

  private RequestTemplate(String label, byte[] json, List<TensorData> inputs, String rawUnavailable) {
    this.label = Objects.requireNonNull(label, "label");
    this.json = json;
    this.inputs = inputs;
    this.rawUnavailable = rawUnavailable;
  }

  /**
   * Reads an OIP v2 JSON inference request ({@code {"inputs":[{"name","shape","datatype","data"}]}}).
   *
   * @throws IOException if the file cannot be read
   * @throws IllegalArgumentException if it is too large or not an OIP request
   */
  public static RequestTemplate fromJsonFile(Path file) throws IOException {
    long size = Files.size(file);
    if (size > MAX_BYTES) {
      throw new IllegalArgumentException(file + " is " + size + " bytes; the limit is " + MAX_BYTES);
    }
    return fromJson(file.getFileName().toString(), Files.readAllBytes(file));
  }

  /**
   * Wraps an OIP v2 JSON request body. Inputs whose data cannot become raw bytes (BYTES, FP16) still
   * work over {@code http-json}; {@link #inputs()} then explains why they cannot be sent otherwise.
   *
   * @throws IllegalArgumentException if the body is not an OIP request
   */
  public static RequestTemplate fromJson(String label, byte[] json) {
    if (json.length > MAX_BYTES) {
      throw new IllegalArgumentException(label + " is " + json.length + " bytes; the limit is " + MAX_BYTES);
    }
    OipJson.Parsed parsed = OipJson.parse(json);
    return new RequestTemplate(label, json.clone(), parsed.inputs(), parsed.rawUnavailable());
  }

  /**
   * A single FP32 input of the given shape filled with pseudo-random values in [0, 1) from {@code seed}.
   *
   * @throws IllegalArgumentException for an empty, negative or too large shape
   */
  public static RequestTemplate generatedFp32(String inputName, long[] shape, long seed) {
    if (shape.length == 0) {
      throw new IllegalArgumentException("shape must have at least one dimension");
    }
    long elements = TensorData.elementCount(shape);
    if (elements * 4 > MAX_BYTES) {
      throw new IllegalArgumentException("a tensor of " + elements + " FP32 elements exceeds " + MAX_BYTES + " bytes");
    }
    float[] values = new float[(int) elements];
    SplittableRandom random = new SplittableRandom(seed);
    for (int i = 0; i < values.length; i++) {
      values[i] = (float) random.nextDouble();
    }
    ByteBuffer raw = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    raw.asFloatBuffer().put(values);
    TensorData tensor = new TensorData(inputName, "FP32", shape, raw.array());
    return new RequestTemplate("fp32:" + OipJson.shapeLabel(shape), OipJson.fp32Request(inputName, shape, values),
        List.of(tensor), null);
  }

  /** A short name for reports: the file name or {@code fp32:1x64}. */
  public String label() {
    return label;
  }

  /** The JSON request body (a copy). */
  public byte[] json() {
    return json.clone();
  }

  public int jsonSize() {
    return json.length;
  }

  /**
   * The input tensors as raw bytes, in request order.
   *
   * @throws IllegalStateException if some input has no fixed-width raw form (e.g. BYTES)
   */
  public List<TensorData> inputs() {
    if (rawUnavailable != null) {
      throw new IllegalStateException(label + ": " + rawUnavailable);
    }
    return inputs;
  }
}
