package io.kiln.pools.impl;

import io.kiln.pools.ChunkStream;
import io.kiln.pools.InferenceException;
import io.kiln.pools.StreamCall;
import io.kiln.pools.StreamingModelRunner;
import io.kiln.pools.Tensor;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A streaming worker's step loop: iteration-level batching over pull streams. Each step first takes in the
 * streams its pool offered since the last one ({@link StreamJoins}: they join at the next step), then gives every
 * open stream that has credit one {@link ChunkStream#next()}; a stream without credit (its reader is slow) is
 * skipped, not waited for, and when no stream can move the thread waits until credit, a cancel, a new stream or a
 * deadline arrives. A stream leaves the step as soon as it ends, fails, is cancelled (closed before its next
 * chunk, so its slot frees within one chunk) or passes its deadline (DEADLINE_EXCEEDED); a model error ends only
 * its own stream. An engine failure (any other exception) ends every open and queued stream UNAVAILABLE and is
 * rethrown: the worker failed. The loop returns once no stream is open or queued.
 *
 * <p>Runs on the worker's thread and blocks it for as long as streams keep coming. How many streams run at once is
 * the pool's to bound: it offers at most {@code max_batch_size} per worker.
 */
public final class StreamSteps {

  private static final Logger LOG = LoggerFactory.getLogger(StreamSteps.class);
  /** The longest the loop sleeps without a heartbeat: the health check reads it. */
  static final long BEAT_MILLIS = 100;

  private StreamSteps() {
  }

  private record Open(StreamSender sender, ChunkStream stream, StreamJoins.Joined joined) {
  }

  /**
   * Runs the loop of the worker named {@code worker} over its intake on {@code hub}'s node.
   *
   * @return how many streams it ran
   */
  public static int loop(StreamingModelRunner runner, StreamHub hub, String worker, LongSupplier nanoClock) {
    return loop(runner, hub, hub.joins(worker), nanoClock);
  }

  static int loop(StreamingModelRunner runner, StreamHub hub, StreamJoins joins, LongSupplier nanoClock) {
    List<Open> open = new ArrayList<>();
    int ran = 0;
    long epoch = joins.epoch();
    try {
      while (true) {
        joins.beat(nanoClock.getAsLong());
        List<StreamJoins.Joined> joined = joins.drain(epoch);
        if (joined == null) { // this incarnation was given up on (killed as stuck) and came back: stop quietly
          open.forEach(o -> {
            closeQuietly(o.stream());
            o.sender().close();
          });
          return ran;
        }
        for (StreamJoins.Joined j : joined) {
          ran++;
          StreamCall c = j.call();
          long deadline = nanoClock.getAsLong() + Math.max(1, c.timeoutMs()) * 1_000_000;
          StreamSender sender = hub.openOutbound(c.target(), joins.monitor, deadline);
          try {
            open.add(new Open(sender, runner.open(c.request()), j));
          } catch (InferenceException e) {
            sender.fail(e);
            joins.done(j);
          }
        }
        if (open.isEmpty()) {
          if (joins.finishIfIdle()) {
            return ran;
          }
          continue;
        }
        if (!step(open, joins, nanoClock)) {
          await(open, joins, nanoClock);
        }
      }
    } catch (RuntimeException | Error e) {
      InferenceException failed = new InferenceException(InferenceException.Kind.UNAVAILABLE,
          "the worker failed mid-stream: " + e.getMessage(), e);
      for (Open o : open) {
        closeQuietly(o.stream());
        o.sender().fail(failed);
      }
      joins.abort(e);
      throw e;
    }
  }

  /** One step over the open streams; whether any of them moved (produced, ended, or was dropped). */
  private static boolean step(List<Open> open, StreamJoins joins, LongSupplier nanoClock) {
    boolean moved = false;
    long now = nanoClock.getAsLong();
    for (Iterator<Open> it = open.iterator(); it.hasNext(); ) {
      Open o = it.next();
      StreamSender s = o.sender();
      boolean over = true;
      if (s.cancelled()) {
        closeQuietly(o.stream());
        s.close();
      } else if (now - s.deadlineNanos() >= 0) {
        closeQuietly(o.stream());
        s.fail(InferenceException.deadlineExceeded("deadline passed while streaming (after " + s.sent() + " chunks)"));
      } else if (s.mayProduce()) {
        try {
          List<Tensor> chunk = o.stream().next();
          if (chunk == null) {
            o.stream().close();
            s.end();
          } else {
            s.chunk(chunk);
            over = false;
          }
        } catch (InferenceException e) {
          closeQuietly(o.stream());
          s.fail(e);
        }
      } else {
        continue;
      }
      moved = true;
      if (over) {
        it.remove();
        joins.done(o.joined());
      }
    }
    return moved;
  }

  private static void await(List<Open> open, StreamJoins joins, LongSupplier nanoClock) {
    synchronized (joins.monitor) {
      while (!joins.hasQueued()) {
        long earliest = Long.MAX_VALUE;
        long now = nanoClock.getAsLong();
        joins.beat(now);
        for (Open o : open) {
          if (o.sender().actionable() || now - o.sender().deadlineNanos() >= 0) {
            return;
          }
          earliest = Math.min(earliest, o.sender().deadlineNanos() - now);
        }
        try {
          joins.monitor.wait(Math.max(1, Math.min(BEAT_MILLIS, earliest / 1_000_000)));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted while waiting for stream credit", e);
        }
      }
    }
  }

  private static void closeQuietly(ChunkStream s) {
    try {
      s.close();
    } catch (RuntimeException e) {
      LOG.debug("closing a stream failed: {}", e.toString());
    }
  }
}
