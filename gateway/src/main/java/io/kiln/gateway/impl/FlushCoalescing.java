package io.kiln.gateway.impl;

import io.netty.channel.ChannelPipeline;
import io.netty.handler.flush.FlushConsolidationHandler;
import io.vertx.core.http.HttpConnection;

/**
 * One socket write for what the event loop answers on a gRPC connection in one turn, not one per HTTP/2 frame.
 *
 * <p>Why: Vert.x flushes an HTTP/2 write at once unless it happens while the connection is reading. The bare
 * gRPC server answers inside the read, so the 16 answers to the 16 requests of one read go out in one
 * {@code write(2)} when the read completes; Kiln answers later, when the pool's reply arrives on the event
 * loop, so each answer was flushed on its own, and twice (vertx-grpc writes the headers and message, then the
 * trailers): two syscalls, two TCP segments per call, the kernel time JFR never sees. A Netty
 * {@link FlushConsolidationHandler} at the head of the pipeline, consolidating outside reads too, turns the
 * flushes of one event-loop turn into one, run as the next task on the same loop: an answer waits at most for
 * the tasks already queued (other answers), and a read's flushes still go out when the read completes.
 *
 * <p>Works through Vert.x's connection base ({@code channelHandlerContext()}); a connection of another kind
 * (none today) is left as it is, which only costs the extra syscalls.
 */
final class FlushCoalescing {

  static final String HANDLER_NAME = "kiln-flush-coalescing";

  /** Flushes held back at most before one goes out regardless (Netty's default). */
  private static final int MAX_HELD_FLUSHES = FlushConsolidationHandler.DEFAULT_EXPLICIT_FLUSH_AFTER_FLUSHES;

  private FlushCoalescing() {
  }

  /** Installs the handler on {@code connection}'s pipeline (once); call from the connection handler. */
  static boolean install(HttpConnection connection) {
    if (!(connection instanceof io.vertx.core.net.impl.ConnectionBase base)) {
      return false;
    }
    ChannelPipeline pipeline = base.channel().pipeline();
    if (pipeline.get(HANDLER_NAME) == null) {
      pipeline.addFirst(HANDLER_NAME, new FlushConsolidationHandler(MAX_HELD_FLUSHES, true));
    }
    return true;
  }
}
