package io.kiln.deploy.node;

import io.kiln.gateway.spi.PoolAdmin;
import io.kiln.gateway.spi.PoolDirectory;
import io.kiln.gateway.spi.PoolEndpoint;
import io.kiln.gateway.spi.PoolStatus;
import io.kiln.pools.ChunkListener;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.RequestContext;
import io.kiln.pools.ResponseStream;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoad;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.pools.ValidatedRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The gateway's one port to the pools, for inference ({@link PoolDirectory}) and for the management APIs and the
 * dashboard ({@link PoolAdmin}): pools from the load board (every pool's queue depth, at most a couple of seconds old,
 * published by the managers themselves over the event bus), requests and model control through the
 * {@link PoolClient}.
 */
public final class PoolsDirectory implements PoolDirectory, PoolAdmin {

  private final String localNode;
  private final PoolLoadBoard board;
  private final PoolClient client;

  public PoolsDirectory(String localNode, PoolLoadBoard board, PoolClient client) {
    this.localNode = localNode;
    this.board = board;
    this.client = client;
  }

  @Override
  public List<PoolEndpoint> pools(String model, String version) {
    List<PoolEndpoint> out = new ArrayList<>();
    for (PoolLoad l : board.pools(model, version)) {
      out.add(new PoolEndpoint(l.nodeId(), l.nodeId().equals(localNode), l.ready() && !l.draining(), l.queueDepth(),
          l.inFlight(), l.capacity(), l.leaving(), l.models()));
    }
    return out;
  }

  @Override
  public CompletableFuture<InferenceResponse> send(PoolEndpoint target, String model, String version,
                                                   ValidatedRequest request, RequestContext context) {
    return client.infer(context, model, version, target.nodeId(), request);
  }

  @Override
  public ResponseStream stream(PoolEndpoint target, String model, String version, ValidatedRequest request,
                               RequestContext context, int window, int maxChunkBytes, ChunkListener listener) {
    return client.stream(context, model, version, target.nodeId(), request, window, maxChunkBytes, listener);
  }

  @Override
  public List<PoolStatus> status(String deployment, String version) {
    List<PoolStatus> out = new ArrayList<>();
    for (PoolLoad l : board.pools(deployment, version)) {
      out.add(new PoolStatus(l.nodeId(), l.ready(), l.draining(), l.queueDepth(), l.inFlight(), l.capacity(),
          l.idleWorkers(), l.busyWorkers()));
    }
    return out;
  }

  @Override
  public CompletionStage<Map<String, String>> models(String deployment, String version, String nodeId) {
    return client.models(deployment, version, nodeId);
  }

  @Override
  public CompletionStage<Boolean> loadModel(String deployment, String version, String nodeId, String model) {
    return client.loadModel(deployment, version, nodeId, model);
  }

  @Override
  public CompletionStage<Integer> unloadModel(String deployment, String version, String nodeId, String model) {
    return client.unloadModel(deployment, version, nodeId, model);
  }
}
