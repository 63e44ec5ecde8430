package io.kiln.deploy.e2e;

import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.vertx.core.Vertx;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;

/** A gRPC client of the OIP service on a Vert.x of its own, as an outside client would be. */
final class OipGrpc implements AutoCloseable {

  private final Vertx vertx = Vertx.vertx();
  private final GrpcClient client = GrpcClient.client(vertx);

  /** The OIP service of the node whose gRPC port is {@code port}. */
  GRPCInferenceServiceGrpcClient at(int port) {
    return GRPCInferenceServiceGrpcClient.create(client, SocketAddress.inetSocketAddress(port, ServingCluster.HOST));
  }

  @Override
  public void close() {
    ServingCluster.join(client.close().toCompletionStage());
    ServingCluster.join(vertx.close().toCompletionStage());
  }
}
