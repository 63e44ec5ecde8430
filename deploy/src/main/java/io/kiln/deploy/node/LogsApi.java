package io.kiln.deploy.node;

import io.kiln.deploy.logging.LogLines;
import io.kiln.gateway.management.BearerToken;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;

/**
 * {@code GET /api/v1/logs?node=ID&lines=N[&follow=true]}: a node's last log lines as {@code text/plain}, one per
 * line, as the node wrote them (text or JSON). {@code node}: any node of the cluster (default: this one); {@code
 * lines}: 1..{@value NodeLogs#MAX_LINES} (default 100); {@code follow=true|1}: keep the answer open (chunked) and
 * write new lines as they come, until the client leaves. The management token applies. 400 names a bad field; 404 an
 * unknown node. Header {@code Kiln-Log-Skipped} (follow: a line {@code … N lines skipped}) tells of lines lost
 * because the node's buffer turned over.
 */
public final class LogsApi {

  static final long FOLLOW_PERIOD_MS = 300;
  private static final int MAX_NODE_ID = 256;

  private final Vertx vertx;
  private final NodeLogs logs;
  private final BearerToken authorize;

  public LogsApi(Vertx vertx, NodeLogs logs, String token) {
    this.vertx = vertx;
    this.logs = logs;
    this.authorize = new BearerToken(token);
  }

  public void mount(Router r) {
    r.route("/api/v1/logs*").handler(authorize);
    r.get("/api/v1/logs").handler(this::logs);
  }

  private void logs(RoutingContext ctx) {
    String node = ctx.request().getParam("node");
    if (node != null && (node.isBlank() || node.length() > MAX_NODE_ID)) {
      error(ctx, 400, "node must be a node id of 1.." + MAX_NODE_ID + " characters");
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
      if (lines < 1 || lines > NodeLogs.MAX_LINES) {
        error(ctx, 400, "lines must be a whole number 1.." + NodeLogs.MAX_LINES + ", got '" + n + "'");
        return;
      }
    }
    String f = ctx.request().getParam("follow");
    if (f != null && !f.equals("true") && !f.equals("1") && !f.equals("false") && !f.equals("0")) {
      error(ctx, 400, "follow must be true or false, got '" + f + "'");
      return;
    }
    boolean follow = "true".equals(f) || "1".equals(f);
    String target = node == null ? logs.nodeId() : node.strip();
    logs.read(target, -1, lines).onComplete(ar -> {
      if (ar.failed()) {
        error(ctx, ar.cause() instanceof NodeLogs.NoSuchNode ? 404 : 502, ar.cause() instanceof NodeLogs.NoSuchNode
            ? ar.cause().getMessage() : "reading the log of node '" + target + "' failed: " + ar.cause().getMessage());
        return;
      }
      HttpServerResponse resp = ctx.response().putHeader(HttpHeaders.CONTENT_TYPE, "text/plain; charset=utf-8")
          .putHeader("Kiln-Node", target);
      if (!follow) {
        resp.end(text(ar.result()));
        return;
      }
      resp.setChunked(true);
      resp.write(text(ar.result()));
      follow(ctx, target, ar.result().next());
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
      logs.read(node, next[0], NodeLogs.MAX_LINES).onComplete(ar -> {
        busy[0] = false;
        if (resp.closed() || resp.ended()) {
          return;
        }
        if (ar.failed()) {
          resp.end("… node '" + node + "' is gone: " + ar.cause().getMessage() + "\n");
          return;
        }
        LogLines.Chunk c = ar.result();
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

  private static String text(LogLines.Chunk c) {
    StringBuilder b = new StringBuilder();
    for (String l : c.lines()) {
      b.append(l).append('\n');
    }
    return b.toString();
  }

  private static void error(RoutingContext ctx, int status, String message) {
    if (ctx.response().ended()) {
      return;
    }
    ctx.response().setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, "application/json")
        .end(new JsonObject().put("error", message).encode());
  }
}
