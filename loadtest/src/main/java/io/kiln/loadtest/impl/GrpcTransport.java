package io.kiln.loadtest.impl;

import io.kiln.loadtest.LoadOptions;
import io.kiln.loadtest.RequestMix;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.common.ServiceName;
import java.util.List;
import java.util.function.Consumer;

/**
 * KServe {@code inference.GRPCInferenceService/ModelInfer} over cleartext HTTP/2 (prior knowledge).
 * Streams are spread over {@code connections} connections, at most concurrency/connections each.
 */
final class GrpcTransport implements Transport {
  static final ServiceName SERVICE = ServiceName.create("inference", "GRPCInferenceService");
  static final String METHOD = "ModelInfer";
  /**
   * The receive windows this client grants per call and per connection. Vert.x's defaults (64 KiB each, returned
   * half at a time) make an 8 MB answer wait for ~260 WINDOW_UPDATE round trips through this client's event loop
   * (issue #36: LoadGen read 80 % of direct where h2load, whose windows are 1 GiB, read 92 %); gRPC's own clients
   * open 1 MiB (grpc-java) or grow to the bandwidth-delay product (grpc-go, C core).
   */
  static final int STREAM_WINDOW = 16 << 20;
  static final int CONNECTION_WINDOW = 64 << 20;

  private final HttpClient http;
  private final GrpcClient grpc;
  private final SocketAddress address;
  private final Buffer[] messages;
  private final long timeoutMs;

  GrpcTransport(Vertx vertx, LoadOptions options, int concurrency) {
    List<RequestMix.Entry> entries = options.mix().entries();
    messages = new Buffer[entries.size()];
    for (int i = 0; i < messages.length; i++) {
      messages[i] = Buffer.buffer(ModelInferEncoder.encode(options.model(), "", entries.get(i).template().inputs()));
    }
    timeoutMs = options.requestTimeout().toMillis();
    int perConnection = Math.max(1, (concurrency + options.connections() - 1) / options.connections());
    HttpClientOptions client = new HttpClientOptions().setProtocolVersion(HttpVersion.HTTP_2)
        .setHttp2ClearTextUpgrade(false).setTcpNoDelay(true).setHttp2MultiplexingLimit(perConnection)
        .setConnectTimeout((int) Math.min(timeoutMs, Integer.MAX_VALUE))
        .setHttp2ConnectionWindowSize(CONNECTION_WINDOW);
    client.getInitialSettings().setInitialWindowSize(STREAM_WINDOW);
    http = vertx.createHttpClient(client,
        new PoolOptions().setHttp2MaxSize(options.connections()).setMaxWaitQueueSize(-1));
    grpc = GrpcClient.client(vertx, http);
    address = SocketAddress.inetSocketAddress(options.port(), options.target().getHost());
  }

  @Override
  public void send(int entry, Consumer<Outcome> done) {
    Buffer message = messages[entry];
    grpc.request(address)
        .compose(req -> {
          req.serviceName(SERVICE).methodName(METHOD).idleTimeout(timeoutMs);
          return req.send(message);
        })
        .compose(resp -> {
          // Content is not inspected: an oversized message must not turn a good answer into an error.
          resp.invalidMessageHandler(ignored -> { });
          resp.handler(ignored -> { });
          return resp.end().transform(ar -> {
            GrpcStatus status = resp.status();
            return status != null ? Future.succeededFuture(Outcome.grpc(status))
                : Future.failedFuture(ar.failed() ? ar.cause() : new IllegalStateException("no gRPC status"));
          });
        })
        .onComplete(ar -> done.accept(ar.succeeded() ? ar.result() : Outcome.failure(ar.cause())));
  }

  @Override
  public Future<Void> close() {
    return grpc.close().transform(ar -> http.close());
  }
}
