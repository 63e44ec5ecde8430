package io.kiln.deploy.node;

import io.kiln.control.LogSource;
import io.kiln.deploy.logging.LogLines;
import io.kiln.runtime.KilnRuntime;
import io.vertx.core.Future;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * Any node's last log lines, for {@code GET /api/v1/logs} (the control plane's {@link io.kiln.control.LogsApi}):
 * this node's from its {@link LogLines}, another's by asking it over the clustered event bus ({@code
 * kiln.logs.<node>}, JSON: {@code {after, lines}} → {@code {lines, next, skipped}}), which every node answers for
 * itself. A reply holds at most {@link #MAX_REPLY_CHARS} characters. Non-blocking; futures complete on the caller's
 * context.
 */
public final class NodeLogs implements LogSource, AutoCloseable {

  static final String ADDRESS = "kiln.logs.";
  /** The most lines one read returns. */
  public static final int MAX_LINES = LogLines.MAX_LINES;
  public static final int MAX_REPLY_CHARS = 1 << 20;
  private static final long ASK_TIMEOUT_MS = 5_000;

  private final KilnRuntime runtime;
  private final Supplier<LogLines> lines;
  private final MessageConsumer<JsonObject> consumer;

  /** @param lines this node's lines (null from the supplier: it keeps none, and answers with none) */
  public NodeLogs(KilnRuntime runtime, Supplier<LogLines> lines) {
    this.runtime = runtime;
    this.lines = lines;
    this.consumer = runtime.vertx().eventBus().<JsonObject>consumer(ADDRESS + runtime.nodeId(), msg -> {
      JsonObject q = msg.body();
      long after = q == null ? -1 : q.getLong("after", -1L);
      int max = q == null ? 100 : Math.max(1, Math.min(MAX_LINES, q.getInteger("lines", 100)));
      msg.reply(toJson(local(after, max)));
    });
  }

  @Override
  public String nodeId() {
    return runtime.nodeId();
  }

  @Override
  public int maxLines() {
    return MAX_LINES;
  }

  /**
   * Up to {@code max} lines of {@code node} after sequence number {@code after} (negative: its last {@code max}).
   * Fails with {@link NoSuchNode} when no such node answers.
   */
  @Override
  public CompletionStage<Chunk> read(String node, long after, int max) {
    return readFuture(node, after, max).toCompletionStage();
  }

  private Future<Chunk> readFuture(String node, long after, int max) {
    if (node == null || node.equals(runtime.nodeId())) {
      return Future.succeededFuture(local(after, max));
    }
    JsonObject q = new JsonObject().put("after", after).put("lines", max);
    return runtime.vertx().eventBus().<JsonObject>request(ADDRESS + node, q,
            new DeliveryOptions().setSendTimeout(ASK_TIMEOUT_MS).setLocalOnly(false))
        .recover(err -> Future.failedFuture(err instanceof ReplyException r && (r.failureType() == ReplyFailure.NO_HANDLERS
            || r.failureType() == ReplyFailure.TIMEOUT)
            ? new NoSuchNode("no node '" + node + "' answers" + (r.failureType() == ReplyFailure.TIMEOUT ? " in time" : ""))
            : err))
        .map(m -> fromJson(m.body()));
  }

  private Chunk local(long after, int max) {
    LogLines l = lines.get();
    if (l == null) {
      return new Chunk(List.of(), Math.max(after, 0), 0);
    }
    LogLines.Chunk c = l.after(after, max, MAX_REPLY_CHARS);
    return new Chunk(c.lines(), c.next(), c.skipped());
  }

  private static JsonObject toJson(Chunk c) {
    return new JsonObject().put("lines", new JsonArray(new ArrayList<>(c.lines()))).put("next", c.next())
        .put("skipped", c.skipped());
  }

  private static Chunk fromJson(JsonObject o) {
    List<String> out = new ArrayList<>();
    JsonArray a = o.getJsonArray("lines", new JsonArray());
    for (int i = 0; i < a.size() && i < MAX_LINES; i++) {
      out.add(String.valueOf(a.getValue(i)));
    }
    return new Chunk(out, o.getLong("next", 0L), o.getLong("skipped", 0L));
  }

  @Override
  public void close() {
    consumer.unregister();
  }
}
