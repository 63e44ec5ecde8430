package io.kiln.loadtest;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** The wire protocol a load test speaks to the target. */
public enum Protocol {
  /** Open Inference Protocol v2 over HTTP/1.1 with a JSON body ({@code POST /v2/models/{m}/infer}). */
  HTTP_JSON("http-json"),
  /**
   * OIP v2 over HTTP/1.1 with the binary tensor extension: a JSON header whose inputs carry
   * {@code binary_data_size}, followed by the raw little-endian tensor bytes, and the header length in
   * {@code Inference-Header-Content-Length}.
   */
  HTTP_BINARY("http-binary"),
  /** KServe {@code inference.GRPCInferenceService/ModelInfer} over HTTP/2 with {@code raw_input_contents}. */
  GRPC("grpc");

  private final String cliName;

  Protocol(String cliName) {
    this.cliName = cliName;
  }

  /** The name used on the command line and in reports. */
  public String cliName() {
    return cliName;
  }

  /**
   * Parses a command-line name ({@code http-json}, {@code http-binary}, {@code grpc}).
   *
   * @throws IllegalArgumentException for an unknown name
   */
  public static Protocol parse(String name) {
    String n = name.trim().toLowerCase(Locale.ROOT);
    for (Protocol p : values()) {
      if (p.cliName.equals(n)) {
        return p;
      }
    }
    throw new IllegalArgumentException("unknown protocol '" + name + "'; expected one of "
        + Arrays.stream(values()).map(Protocol::cliName).collect(Collectors.joining(", ")));
  }
}
