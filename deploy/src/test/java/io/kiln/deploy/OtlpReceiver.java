package io.kiln.deploy;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.WireFormat;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A real OTLP/HTTP trace receiver for tests: a Vert.x HTTP server on loopback answering {@code POST /v1/traces}
 * and decoding each {@code ExportTraceServiceRequest} (protobuf, per opentelemetry-proto's field numbers, read with
 * protobuf-java's {@link CodedInputStream}) into {@link Received} spans.
 */
public final class OtlpReceiver implements AutoCloseable {

  /** One span as received. Ids in lower-case hex; {@code parentSpanId} empty for a root span. */
  public record Received(String traceId, String spanId, String parentSpanId, String name, int kind, String traceState,
                         Map<String, String> attributes, String service, String serviceInstance, int statusCode,
                         Map<String, String> resource) {
  }

  private final Vertx vertx = Vertx.vertx();
  private final HttpServer server;
  private final List<Received> spans = new CopyOnWriteArrayList<>();
  private final List<String> contentTypes = new CopyOnWriteArrayList<>();

  public OtlpReceiver() {
    server = vertx.createHttpServer().requestHandler(req -> {
      if (!req.path().equals("/v1/traces")) {
        req.response().setStatusCode(404).end();
        return;
      }
      contentTypes.add(String.valueOf(req.getHeader("Content-Type")));
      req.body().onSuccess(body -> {
        try {
          decodeRequest(CodedInputStream.newInstance(body.getBytes()));
          req.response().setStatusCode(200).putHeader("Content-Type", "application/x-protobuf").end();
        } catch (IOException | RuntimeException e) {
          req.response().setStatusCode(400).end(e.toString());
        }
      });
    });
    try {
      server.listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** The base endpoint to configure ({@code --otel-endpoint}). */
  public String endpoint() {
    return "http://127.0.0.1:" + server.actualPort();
  }

  public List<Received> spans() {
    return List.copyOf(spans);
  }

  public List<Received> spans(String traceId) {
    return spans.stream().filter(s -> s.traceId().equals(traceId)).toList();
  }

  public List<String> contentTypes() {
    return List.copyOf(contentTypes);
  }

  private void decodeRequest(CodedInputStream in) throws IOException {
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      if (WireFormat.getTagFieldNumber(tag) == 1) { // resource_spans
        decodeResourceSpans(CodedInputStream.newInstance(in.readBytes().toByteArray()));
      } else {
        in.skipField(tag);
      }
    }
  }

  private void decodeResourceSpans(CodedInputStream in) throws IOException {
    Map<String, String> resource = new LinkedHashMap<>();
    List<ByteString> scopeSpans = new java.util.ArrayList<>();
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      switch (WireFormat.getTagFieldNumber(tag)) {
        case 1 -> { // resource: attributes = 1
          CodedInputStream r = CodedInputStream.newInstance(in.readBytes().toByteArray());
          for (int t = r.readTag(); t != 0; t = r.readTag()) {
            if (WireFormat.getTagFieldNumber(t) == 1) {
              keyValue(r.readBytes(), resource);
            } else {
              r.skipField(t);
            }
          }
        }
        case 2 -> scopeSpans.add(in.readBytes());
        default -> in.skipField(tag);
      }
    }
    for (ByteString s : scopeSpans) {
      CodedInputStream ss = CodedInputStream.newInstance(s.toByteArray());
      for (int t = ss.readTag(); t != 0; t = ss.readTag()) {
        if (WireFormat.getTagFieldNumber(t) == 2) {
          spans.add(span(ss.readBytes(), resource));
        } else {
          ss.skipField(t);
        }
      }
    }
  }

  private static Received span(ByteString bytes, Map<String, String> resource) throws IOException {
    CodedInputStream in = CodedInputStream.newInstance(bytes.toByteArray());
    String traceId = "";
    String spanId = "";
    String parent = "";
    String name = "";
    String state = "";
    int kind = 0;
    int status = 0;
    Map<String, String> attributes = new LinkedHashMap<>();
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      switch (WireFormat.getTagFieldNumber(tag)) {
        case 1 -> traceId = HexFormat.of().formatHex(in.readBytes().toByteArray());
        case 2 -> spanId = HexFormat.of().formatHex(in.readBytes().toByteArray());
        case 3 -> state = in.readString();
        case 4 -> parent = HexFormat.of().formatHex(in.readBytes().toByteArray());
        case 5 -> name = in.readString();
        case 6 -> kind = in.readEnum();
        case 9 -> keyValue(in.readBytes(), attributes);
        case 15 -> { // status: code = 3
          CodedInputStream st = CodedInputStream.newInstance(in.readBytes().toByteArray());
          for (int t = st.readTag(); t != 0; t = st.readTag()) {
            if (WireFormat.getTagFieldNumber(t) == 3) {
              status = st.readEnum();
            } else {
              st.skipField(t);
            }
          }
        }
        default -> in.skipField(tag);
      }
    }
    return new Received(traceId, spanId, parent, name, kind, state, attributes, resource.get("service.name"),
        resource.get("service.instance.id"), status, Map.copyOf(resource));
  }

  /** KeyValue {key = 1; AnyValue value = 2 {string = 1, bool = 2, int = 3, double = 4}}, as text. */
  private static void keyValue(ByteString bytes, Map<String, String> into) throws IOException {
    CodedInputStream in = CodedInputStream.newInstance(bytes.toByteArray());
    String key = null;
    String value = null;
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      if (WireFormat.getTagFieldNumber(tag) == 1) {
        key = in.readString();
      } else if (WireFormat.getTagFieldNumber(tag) == 2) {
        CodedInputStream v = CodedInputStream.newInstance(in.readBytes().toByteArray());
        for (int t = v.readTag(); t != 0; t = v.readTag()) {
          switch (WireFormat.getTagFieldNumber(t)) {
            case 1 -> value = v.readString();
            case 2 -> value = Boolean.toString(v.readBool());
            case 3 -> value = Long.toString(v.readInt64());
            case 4 -> value = Double.toString(v.readDouble());
            default -> v.skipField(t);
          }
        }
      } else {
        in.skipField(tag);
      }
    }
    if (key != null) {
      into.put(key, value);
    }
  }

  @Override
  public void close() {
    try {
      vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new UncheckedIOException(new IOException(e));
    }
  }
}
