package io.kiln.control;

import io.kiln.control.impl.Answers;
import io.kiln.runtime.Futures;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;

/**
 * {@code GET /api/v1/logs?node=ID&lines=N[&follow=true]}: a node's last log lines as {@code text/plain}, one per
 * line, as the node wrote them (text or JSON). {@code node}: any node of the cluster (default: this one); {@code
 * lines}: 1..{@link LogSource#maxLines} (default 100); {@code follow=true|1}: keep the answer open (chunked) and
 * write new lines as they come, until the client leaves. The management token applies. 400 names a bad field; 404 an
 * unknown node. Header {@code Kiln-Log-Skipped} (follow: a line {@code … N lines skipped}) tells of lines lost
 * because the node's buffer turned over.
 */
public final class LogsApi {

  static final long FOLLOW_PERIOD_MS = 300;
  private static final int MAX_NODE_ID = 256;

  private final Vertx vertx;
  private final LogSource logs;
  private final Handler<RoutingContext> authorize;

  /** @param token required bearer token, or null/empty for none */
  public LogsApi(Vertx vertx, LogSource logs, String token) {
    this.vertx = vertx;
    this.logs = logs;
    this.authorize = Answers.authorize(token);
  }

  public void mount(Router r) {
    r.route("/api/v1/logs*").handler(authorize);
    r.get("/api/v1/logs").handler(this::logs);
  }

  private void logs(RoutingContext ctx) {
    String node = ctx.request().getParam("node");
    if (node != null && (node.isBlank() || node.length() > MAX_NODE_ID)) {
      Answers.error(ctx, 400, "node must be a node id of 1.." + MAX_NODE_ID + " characters");
      return;
    }
    int lines = 100;
    String n = ctx.request().getParam("lines");
    if (n != null) {
      try {
        lines = Integer.parseInt(n.strip());
      } catch (NumberFormatException e) {
        lines = -1;
      }
      if (lines < 1 || lines > logs.maxLines()) {
        Answers.error(ctx, 400, "lines must be a whole number 1.." + logs.maxLines() + ", got '" + n + "'");
        return;
      }
    }
    String f = ctx.request().getParam("follow");
    if (f != null && !f.equals("true") && !f.equals("1") && !f.equals("false") && !f.equals("0")) {
      Answers.error(ctx, 400, "follow must be true or false, got '" + f + "'");
      return;
    }
    boolean follow = "true".equals(f) || "1".equals(f);
    String target = node == null ? logs.nodeId() : node.strip();
    logs.read(target, -1, lines).whenComplete((chunk, err) -> {
      if (err != null) {
        Throwable t = Futures.unwrapCompletion(err);
        Answers.error(ctx, t instanceof LogSource.NoSuchNode ? 404 : 502, t instanceof LogSource.NoSuchNode
            ? t.getMessage() : "reading the log of node '" + target + "' failed: " + t.getMessage());
        return;
      }
      if (ctx.response().ended() || ctx.response().closed()) {
        return;
      }
      HttpServerResponse resp = ctx.response().putHeader(HttpHeaders.CONTENT_TYPE, "text/plain; charset=utf-8")
          .putHeader("Kiln-Node", target);
      if (!follow) {
        resp.end(text(chunk));
        return;
      }
      resp.setChunked(true);
      resp.write(text(chunk));
      follow(ctx, target, chunk.next());
    });
  }

  private void follow(RoutingContext ctx, String node, long start) {
    HttpServerResponse resp = ctx.response();
    long[] next = {start};
    boolean[] busy = {false};
    long timer = vertx.setPeriodic(FOLLOW_PERIOD_MS, id -> {
      if (busy[0] || resp.writeQueueFull()) {
        return; // a slow reader: wait for it rather than buffer without bound
      }
      busy[0] = true;
      logs.read(node, next[0], logs.maxLines()).whenComplete((c, err) -> {
        busy[0] = false;
        if (resp.closed() || resp.ended()) {
          return;
        }
        if (err != null) {
          resp.end("… node '" + node + "' is gone: " + Futures.unwrapCompletion(err).getMessage() + "\n");
          return;
        }
        if (c.skipped() > 0) {
          resp.write("… " + c.skipped() + " lines skipped\n");
        }
        if (!c.lines().isEmpty()) {
          resp.write(text(c));
        }
        next[0] = c.next();
      });
    });
    resp.closeHandler(v -> vertx.cancelTimer(timer));
    resp.endHandler(v -> vertx.cancelTimer(timer));
  }

  private static String text(LogSource.Chunk c) {
    StringBuilder b = new StringBuilder();
    for (String l : c.lines()) {
      b.append(l).append('\n');
    }
    return b.toString();
  }
}
