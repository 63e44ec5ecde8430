package io.kiln.loadtest;

import io.kiln.loadtest.impl.CliArgs;
import io.kiln.loadtest.impl.ModelInferEncoder;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;

/**
 * Writes one gRPC-framed {@code inference.ModelInferRequest} (the 5-byte gRPC message prefix, then the protobuf)
 * for an OIP JSON request file, tensors in {@code raw_input_contents}: the body a native HTTP/2 load generator
 * ({@code h2load -d FILE}) posts to {@code /inference.GRPCInferenceService/ModelInfer}, so gRPC is measured with
 * a client as cheap as wrk is for HTTP/1.1.
 */
public final class GrpcRequestFile {

  private GrpcRequestFile() {
  }

  /** The framed request: compression flag 0, the message length (big-endian), the message. */
  public static byte[] framed(String model, RequestTemplate request) {
    byte[] message = ModelInferEncoder.encode(model, "", request.inputs());
    return ByteBuffer.allocate(5 + message.length).put((byte) 0).putInt(message.length).put(message).array();
  }

  /** {@code GrpcRequestFile --request FILE.json --model M --out FILE.bin}. Exits 2 on bad arguments, 1 on I/O errors. */
  public static void main(String[] argv) {
    Path request;
    Path out;
    String model;
    try {
      CliArgs args = CliArgs.parse(argv, Set.of());
      if (!args.has("request") || !args.has("model") || !args.has("out")) {
        throw new IllegalArgumentException("usage: GrpcRequestFile --request FILE.json --model M --out FILE.bin");
      }
      request = Path.of(args.string("request", null));
      model = args.string("model", null);
      out = Path.of(args.string("out", null));
      args.rejectUnused();
    } catch (IllegalArgumentException e) {
      System.err.println("error: " + e.getMessage());
      System.exit(2);
      return;
    }
    try {
      Files.write(out, framed(model, RequestTemplate.fromJsonFile(request)));
    } catch (IOException | IllegalArgumentException | IllegalStateException e) {
      System.err.println("failed: " + e.getMessage());
      System.exit(1);
    }
  }
}
