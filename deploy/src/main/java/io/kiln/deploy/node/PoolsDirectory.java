package io.kiln.deploy.node;

import io.kiln.gateway.spi.PoolAdmin;
import io.kiln.gateway.spi.PoolDirectory;
import io.kiln.gateway.spi.PoolEndpoint;
import io.kiln.gateway.spi.PoolStatus;
import io.kiln.pools.ChunkListener;
import io.kiln.pipelines.graphs.GraphNode;
import io.kiln.pipelines.graphs.Graphs;
import io.kiln.pools.InferenceException;
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
import java.util.function.Predicate;

/**
 * The gateway's one port to the pools, for inference ({@link PoolDirectory}) and for the management APIs and the
 * dashboard ({@link PoolAdmin}): pools from the load board (every pool's queue depth, at most a couple of seconds old,
 * published by the managers themselves over the event bus), requests and model control through the
 * {@link PoolClient}. A model graph ({@link Graphs}) is a model whose "pools" are the nodes running a pool of every
 * step: the gateway's router picks one of them as it picks a pool (local first), and the request runs the graph's
 * steps on that node's pools.
 */
public final class PoolsDirectory implements PoolDirectory, PoolAdmin {

  private final String localNode;
  private final PoolLoadBoard board;
  private final PoolClient client;
  private final Graphs graphs; // null: no graphs
  private final Predicate<String> isGraph;

  public PoolsDirectory(String localNode, PoolLoadBoard board, PoolClient client) {
    this(localNode, board, client, null, name -> false);
  }

  /**
   * @param graphs the node's model graphs
   * @param isGraph whether a model name is a graph's (one no deployment has)
   */
  public PoolsDirectory(String localNode, PoolLoadBoard board, PoolClient client, Graphs graphs,
                        Predicate<String> isGraph) {
    this.localNode = localNode;
    this.board = board;
    this.client = client;
    this.graphs = graphs;
    this.isGraph = isGraph;
  }

  /** One map lookup for a deployment's requests: most names are no graph's. */
  private boolean graph(String model) {
    return graphs != null && graphs.graph(model).isPresent() && isGraph.test(model);
  }

  @Override
  public List<PoolEndpoint> pools(String model, String version) {
    if (graph(model)) {
      List<PoolEndpoint> out = new ArrayList<>();
      for (GraphNode n : graphs.nodes(model)) {
        out.add(new PoolEndpoint(n.nodeId(), n.nodeId().equals(localNode), n.ready(), n.queueDepth(), n.inFlight(),
            n.capacity(), n.leaving()));
      }
      return out;
    }
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
    if (graph(model)) {
      return graphs.infer(context, model, target.nodeId(), request);
    }
    return client.infer(context, model, version, target.nodeId(), request);
  }

  @Override
  public ResponseStream stream(PoolEndpoint target, String model, String version, ValidatedRequest request,
                               RequestContext context, int window, int maxChunkBytes, ChunkListener listener) {
    if (graph(model)) {
      throw InferenceException.invalid("'" + model + "' is a model graph: it answers once (infer), it does not stream");
    }
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
