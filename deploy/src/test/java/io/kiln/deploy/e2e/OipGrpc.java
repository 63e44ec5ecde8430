package io.kiln.deploy.e2e;

import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.common.ServiceMethod;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** A gRPC client of the OIP service on a Vert.x of its own, as an outside client would be. */
final class OipGrpc implements AutoCloseable {

  private final Vertx vertx = Vertx.vertx();
  private final GrpcClient client = GrpcClient.client(vertx);

  /** The outcome of one unary call, error or not; {@code trailers} holds all response metadata. */
  record Result<T>(GrpcStatus status, String message, T body, MultiMap trailers) {
  }

  /** The OIP service of the node whose gRPC port is {@code port}. */
  GRPCInferenceServiceGrpcClient at(int port) {
    return GRPCInferenceServiceGrpcClient.create(client, SocketAddress.inetSocketAddress(port, ServingCluster.HOST));
  }

  /** A unary call through the raw client API, with metadata, so that status, message and trailers can be checked. */
  <Q, R> Result<R> call(int port, ServiceMethod<R, Q> method, Q request, Map<String, String> metadata) {
    return ServingCluster.join(client.request(SocketAddress.inetSocketAddress(port, ServingCluster.HOST), method)
        .compose(req -> {
          metadata.forEach((k, v) -> req.headers().set(k, v));
          req.end(request);
          return req.response().compose(resp -> {
            List<R> messages = new ArrayList<>();
            resp.handler(messages::add);
            return resp.end().transform(ar -> {
              // An error without messages is a trailers-only response: its trailers arrive as headers.
              MultiMap all = MultiMap.caseInsensitiveMultiMap().addAll(resp.headers()).addAll(resp.trailers());
              return Future.succeededFuture(new Result<>(resp.status(), resp.statusMessage(),
                  messages.isEmpty() ? null : messages.get(0), all));
            });
          });
        }).toCompletionStage());
  }

  @Override
  public void close() {
    ServingCluster.join(client.close().toCompletionStage());
    ServingCluster.join(vertx.close().toCompletionStage());
  }
}
