package io.kiln.runtime.impl;

import io.netty.channel.SingleThreadEventLoop;
import io.netty.util.concurrent.FastThreadLocal;
import io.vertx.core.Context;
import io.vertx.core.internal.ContextInternal;
import java.util.ArrayDeque;

/**
 * Work for another context on the calling thread's own event loop (a local actor call into a cell on this loop, an
 * answer to a caller on it), run at the end of the loop's turn rather than queued as a task: everything the turn
 * brings for this loop's contexts runs there in order, each with its own context current, in one Netty tail task per
 * turn. The turn's stages stay grouped as queued tasks group them (the loop reads and parses every request of its
 * turn, then the manager admits them all, then the answers are written), which running the work at once would
 * interleave per request, but nothing is queued per request: a tail task runs once the loop has run the turn's I/O
 * and tasks, before it waits again. Work added while the turn's end runs (an admitted request's batch, the worker's
 * answer) runs in the same pass. Past {@value #PER_PASS} pieces of work in one pass, the rest waits for the next
 * turn (a regular task), in the same order, so a chain of calls cannot hold the loop away from its I/O.
 *
 * <p>Work for a context on another thread, or from a thread that is no Netty event loop, is queued to its context
 * as before.
 */
final class TurnEnds {

  static final int PER_PASS = 4096;

  private static final FastThreadLocal<Pending> PENDING = new FastThreadLocal<>() {
    @Override
    protected Pending initialValue() {
      return new Pending();
    }
  };

  private TurnEnds() {
  }

  /** Runs {@code work} on {@code context}: at the end of this loop's turn when its loop is this thread, else queued. */
  static void run(Context context, Runnable work) {
    ContextInternal c = (ContextInternal) context;
    if (c.isEventLoopContext() && c.nettyEventLoop() instanceof SingleThreadEventLoop loop && loop.inEventLoop()) {
      Pending p = PENDING.get();
      p.queue.add(c);
      p.queue.add(work);
      if (!p.armed) {
        p.armed = true;
        loop.executeAfterEventLoopIteration(() -> p.drain(loop));
      }
    } else {
      context.runOnContext(v -> work.run());
    }
  }

  /** One event-loop thread's work for the end of its turn: context, work, context, work, ... */
  private static final class Pending {
    private final ArrayDeque<Object> queue = new ArrayDeque<>();
    private boolean armed;

    void drain(SingleThreadEventLoop loop) {
      for (int n = 0; n < PER_PASS; n++) {
        ContextInternal c = (ContextInternal) queue.poll();
        if (c == null) {
          armed = false;
          return;
        }
        c.dispatch((Runnable) queue.poll()); // reports what the work throws to its context, as a task's would be
      }
      loop.execute(() -> drain(loop)); // still armed: what comes meanwhile queues behind the rest, in order
    }
  }
}
