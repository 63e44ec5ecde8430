package io.kiln.pools.impl;

import io.kiln.pools.ChunkStep;
import io.kiln.pools.ChunkStream;
import io.kiln.pools.InferenceException;
import io.kiln.pools.StreamCall;
import io.kiln.pools.StreamingModelRunner;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.IntConsumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A streaming worker's step loop: iteration-level batching over pull streams. Each step first takes in the
 * streams its pool offered since the last one ({@link StreamJoins}: they join at the next step), then gives every
 * open stream that has credit its next chunk, all of them from one {@link StreamingModelRunner#next(List)} call (the
 * model's step); a stream without credit (its reader is slow) is
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
    return loop(runner, hub, worker, nanoClock, n -> { });
  }

  /**
   * {@link #loop(StreamingModelRunner, StreamHub, String, LongSupplier)}, telling {@code stepWidth} how many streams
   * each model step advanced (one call per step).
   */
  public static int loop(StreamingModelRunner runner, StreamHub hub, String worker, LongSupplier nanoClock,
                         IntConsumer stepWidth) {
    return loop(runner, hub, hub.joins(worker), nanoClock, stepWidth);
  }

  static int loop(StreamingModelRunner runner, StreamHub hub, StreamJoins joins, LongSupplier nanoClock,
                  IntConsumer stepWidth) {
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
        if (!step(runner, open, joins, nanoClock, stepWidth)) {
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

  /**
   * One step over the open streams: those cancelled or past their deadline leave, every one with credit gets its
   * next chunk from one {@link StreamingModelRunner#next(List)} call. Whether any stream moved (produced, ended, or
   * was dropped).
   */
  private static boolean step(StreamingModelRunner runner, List<Open> open, StreamJoins joins, LongSupplier nanoClock,
                              IntConsumer stepWidth) {
    boolean moved = false;
    long now = nanoClock.getAsLong();
    List<Open> stepping = new ArrayList<>(open.size());
    for (Iterator<Open> it = open.iterator(); it.hasNext(); ) {
      Open o = it.next();
      StreamSender s = o.sender();
      if (s.cancelled()) {
        closeQuietly(o.stream());
        s.close();
      } else if (now - s.deadlineNanos() >= 0) {
        closeQuietly(o.stream());
        s.fail(InferenceException.deadlineExceeded("deadline passed while streaming (after " + s.sent() + " chunks)"));
      } else {
        if (s.mayProduce()) {
          stepping.add(o);
        }
        continue;
      }
      moved = true;
      it.remove();
      joins.done(o.joined());
    }
    if (stepping.isEmpty()) {
      return moved;
    }
    List<ChunkStream> streams = new ArrayList<>(stepping.size());
    stepping.forEach(o -> streams.add(o.stream()));
    List<ChunkStep> steps = runner.next(streams);
    if (steps.size() != stepping.size()) {
      throw new IllegalStateException("the runner's step answered " + steps.size() + " streams of " + stepping.size());
    }
    stepWidth.accept(stepping.size());
    for (int i = 0; i < stepping.size(); i++) {
      Open o = stepping.get(i);
      ChunkStep step = steps.get(i);
      StreamSender s = o.sender();
      if (step.pending()) {
        continue;
      }
      InferenceException failure = step.failure();
      if (!step.over()) {
        try {
          s.chunk(step.chunk());
          continue;
        } catch (InferenceException e) { // TOO_LARGE: nothing was sent
          failure = e;
        }
      }
      if (failure != null) {
        closeQuietly(o.stream());
        s.fail(failure);
      } else {
        o.stream().close();
        s.end();
      }
      open.remove(o);
      joins.done(o.joined());
    }
    return true;
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
