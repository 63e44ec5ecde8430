package io.kiln.loadtest;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A weighted choice over request templates: each request the generator sends is drawn independently
 * with probability weight / total. Immutable and thread-safe.
 *
 * <p>Mix file format, one entry a line, {@code #} starts a comment:
 * <pre>
 * # weight  source
 * 3         small.json          # an OIP JSON request file, relative to the mix file
 * 1         fp32:1x3x224x224    # a generated FP32 tensor (input name "input")
 * </pre>
 */
public final class RequestMix {
  /** Input name used for generated tensors unless a caller says otherwise. */
  public static final String DEFAULT_INPUT_NAME = "input";

  /** One template and its relative weight (> 0). */
  public record Entry(RequestTemplate template, double weight) {
    public Entry {
      Objects.requireNonNull(template, "template");
      if (!(weight > 0) || Double.isInfinite(weight)) {
        throw new IllegalArgumentException("weight must be positive and finite, got " + weight);
      }
    }
  }

  private final List<Entry> entries;
  private final double[] cumulative;

  private RequestMix(List<Entry> entries) {
    if (entries.isEmpty()) {
      throw new IllegalArgumentException("a request mix needs at least one entry");
    }
    this.entries = List.copyOf(entries);
    this.cumulative = new double[entries.size()];
    double total = 0;
    for (int i = 0; i < entries.size(); i++) {
      total += entries.get(i).weight();
      cumulative[i] = total;
    }
    for (int i = 0; i < cumulative.length; i++) {
      cumulative[i] /= total;
    }
  }

  /** A mix of the given entries. */
  public static RequestMix of(List<Entry> entries) {
    return new RequestMix(entries);
  }

  /** Always the same request. */
  public static RequestMix single(RequestTemplate template) {
    return new RequestMix(List.of(new Entry(template, 1)));
  }

  /**
   * Reads a mix file (format in the class comment).
   *
   * @throws IOException if it or a file it names cannot be read
   * @throws IllegalArgumentException for a malformed line, with its line number
   */
  public static RequestMix fromFile(Path mixFile) throws IOException {
    Path base = mixFile.toAbsolutePath().getParent();
    List<Entry> entries = new ArrayList<>();
    List<String> lines = Files.readAllLines(mixFile, StandardCharsets.UTF_8);
    for (int n = 0; n < lines.size(); n++) {
      String line = lines.get(n);
      int hash = line.indexOf('#');
      String content = (hash >= 0 ? line.substring(0, hash) : line).trim();
      if (content.isEmpty()) {
        continue;
      }
      String[] parts = content.split("\\s+");
      if (parts.length != 2) {
        throw new IllegalArgumentException(mixFile + ":" + (n + 1) + ": expected 'WEIGHT SOURCE', got '" + content + "'");
      }
      try {
        entries.add(new Entry(source(parts[1], base), Double.parseDouble(parts[0])));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(mixFile + ":" + (n + 1) + ": " + e.getMessage(), e);
      }
    }
    return new RequestMix(entries);
  }

  /**
   * A template from a source string: {@code fp32:1x64} (generated) or a path to an OIP JSON file.
   *
   * @throws IOException if the file cannot be read
   */
  public static RequestTemplate source(String source, Path base) throws IOException {
    if (source.startsWith("fp32:")) {
      return RequestTemplate.generatedFp32(DEFAULT_INPUT_NAME, parseShape(source.substring(5)), 42);
    }
    Path p = Path.of(source);
    return RequestTemplate.fromJsonFile(p.isAbsolute() || base == null ? p : base.resolve(p));
  }

  /**
   * Parses {@code 1x3x224x224} or {@code 1,64}.
   *
   * @throws IllegalArgumentException for anything else
   */
  public static long[] parseShape(String text) {
    String[] dims = text.trim().split("[x,]");
    long[] shape = new long[dims.length];
    for (int i = 0; i < dims.length; i++) {
      try {
        shape[i] = Long.parseLong(dims[i].trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("bad shape '" + text + "': expected e.g. 1x64 or 1,64", e);
      }
      if (shape[i] <= 0) {
        throw new IllegalArgumentException("bad shape '" + text + "': dimensions must be positive");
      }
    }
    return shape;
  }

  public List<Entry> entries() {
    return entries;
  }

  /** The index of the entry chosen by a uniform draw {@code u} in [0, 1). */
  public int pick(double u) {
    for (int i = 0; i < cumulative.length - 1; i++) {
      if (u < cumulative[i]) {
        return i;
      }
    }
    return cumulative.length - 1;
  }
}
