package io.kiln.runtime.impl;

import io.kiln.runtime.NodeOptions;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link NodeAgent}'s row in the node table: owns what the row says beyond the ledger (the advertised
 * services, the start time, the row version) and its writing, coalesced by a {@link RowPublisher} to at most
 * one write per {@link NodeAgent#ROW_INTERVAL_MS}.
 *
 * <p>Thread-safe: {@link #changed} and {@link #setService} may be called from any thread (cells' verticles,
 * task threads, the agent's context); the publisher's timers run on the agent's context.
 */
final class NodeRow {

  private static final Logger LOG = LoggerFactory.getLogger(NodeAgent.class);

  private final Vertx vertx;
  private final NodeOptions node;
  private final ResourceLedger ledger;
  private final NodeTable nodeTable;
  private final Supplier<Context> agentContext;
  private final BooleanSupplier closing;
  private final AtomicLong rowVersion = new AtomicLong();
  private final long startedAt = System.currentTimeMillis();
  private final Map<String, String> services = new ConcurrentHashMap<>();
  private final RowPublisher publisher;

  /**
   * @param agentContext the agent's context once started (null before): where the publisher's timers run
   * @param closing whether the node is shutting down (a failed write then is not worth a log line)
   */
  NodeRow(Vertx vertx, NodeOptions node, ResourceLedger ledger, NodeTable nodeTable, LongSupplier nanoClock,
          Supplier<Context> agentContext, BooleanSupplier closing) {
    this.vertx = vertx;
    this.node = node;
    this.ledger = ledger;
    this.nodeTable = nodeTable;
    this.agentContext = agentContext;
    this.closing = closing;
    this.publisher = new RowPublisher(NodeAgent.ROW_INTERVAL_MS, nanoClock, this::afterOnAgentContext,
        this::currentRow, this::writeRow);
  }

  /** This node's row changed (resources, services): it is written now or at the end of the interval. */
  void changed() {
    publisher.changed();
  }

  /** Advertises a service port in the row. */
  void setService(String name, String value) {
    services.put(name, value);
    changed();
  }

  /** Stops writing; completes when no write of the row can land any more. */
  CompletionStage<Void> close() {
    return publisher.close();
  }

  /**
   * The publisher's timer. Set on the agent's context, never the caller's: a release from a dying actor
   * runs on that actor's verticle, and undeploying it cancelled the timer, leaving the publisher waiting on a
   * timer that never fired and the node's row stale for good (other nodes kept seeing the dead actor's
   * resources as taken).
   */
  private void afterOnAgentContext(long delayMillis, Runnable task) {
    Context c = agentContext.get();
    if (c == null) {
      vertx.setTimer(Math.max(1, delayMillis), id -> task.run());
    } else {
      c.runOnContext(v -> vertx.setTimer(Math.max(1, delayMillis), id -> task.run()));
    }
  }

  private NodeRecord currentRow() {
    return new NodeRecord(node.nodeId(), node.host(), ledger.total().units(), ledger.available().units(),
        node.labels(), Map.copyOf(services), startedAt, rowVersion.incrementAndGet());
  }

  private CompletionStage<Void> writeRow(NodeRecord row) {
    return nodeTable.publish(row).whenComplete((v, e) -> {
      if (e != null && !closing.getAsBoolean()) {
        LOG.debug("publishing node row failed", e);
      }
    });
  }
}
