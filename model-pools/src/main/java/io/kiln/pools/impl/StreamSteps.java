package io.kiln.pools.impl;

import io.kiln.pools.ChunkStream;
import io.kiln.pools.InferenceException;
import io.kiln.pools.StreamCall;
import io.kiln.pools.StreamingModelRunner;
import io.kiln.pools.Tensor;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker running the streams its pool dispatched together: iteration-level batching over pull streams. Each
 * step gives every open stream that has credit one {@link ChunkStream#next()}; a stream without credit (its
 * reader is slow) is skipped, not waited for, and when no stream can move the worker thread waits until credit,
 * a cancel or a deadline arrives. A cancelled stream is closed before its next chunk, so its slot frees within
 * one chunk; a stream past its deadline ends DEADLINE_EXCEEDED; a model error ends only its own stream. An
 * engine failure (any other exception) ends every open stream UNAVAILABLE and is rethrown: the worker failed.
 *
 * <p>Runs on the worker's thread and blocks it for the streams' whole duration.
 */
public final class StreamSteps {

  private static final Logger LOG = LoggerFactory.getLogger(StreamSteps.class);

  private StreamSteps() {
  }

  private record Open(StreamSender sender, ChunkStream stream) {
  }

  /** @return one empty output list per call (the chunks went to their receivers) */
  public static List<List<Tensor>> run(StreamingModelRunner runner, StreamHub hub, List<StreamCall> calls,
                                       LongSupplier nanoClock) {
    Object monitor = new Object();
    List<Open> open = new ArrayList<>(calls.size());
    try {
      for (StreamCall c : calls) {
        long deadline = nanoClock.getAsLong() + Math.max(1, c.timeoutMs()) * 1_000_000;
        StreamSender sender = hub.openOutbound(c.target(), monitor, deadline);
        try {
          open.add(new Open(sender, runner.open(c.request())));
        } catch (InferenceException e) {
          sender.fail(e);
        }
      }
      while (!open.isEmpty()) {
        if (!step(open, nanoClock) && !open.isEmpty()) {
          await(open, monitor, nanoClock);
        }
      }
    } catch (RuntimeException | Error e) {
      InferenceException failed = new InferenceException(InferenceException.Kind.UNAVAILABLE,
          "the worker failed mid-stream: " + e.getMessage(), e);
      for (Open o : open) {
        closeQuietly(o.stream());
        o.sender().fail(failed);
      }
      throw e;
    }
    return Collections.nCopies(calls.size(), List.of());
  }

  /** One step over the open streams; whether any of them moved (produced, ended, or was dropped). */
  private static boolean step(List<Open> open, LongSupplier nanoClock) {
    boolean moved = false;
    long now = nanoClock.getAsLong();
    for (Iterator<Open> it = open.iterator(); it.hasNext(); ) {
      Open o = it.next();
      StreamSender s = o.sender();
      if (s.cancelled()) {
        closeQuietly(o.stream());
        s.close();
        it.remove();
        moved = true;
      } else if (now - s.deadlineNanos() >= 0) {
        closeQuietly(o.stream());
        s.fail(InferenceException.deadlineExceeded("deadline passed while streaming (after " + s.sent() + " chunks)"));
        it.remove();
        moved = true;
      } else if (s.mayProduce()) {
        moved = true;
        List<Tensor> chunk;
        try {
          chunk = o.stream().next();
          if (chunk == null) {
            o.stream().close();
            s.end();
            it.remove();
          } else {
            s.chunk(chunk);
          }
        } catch (InferenceException e) {
          closeQuietly(o.stream());
          s.fail(e);
          it.remove();
        }
      }
    }
    return moved;
  }

  private static void await(List<Open> open, Object monitor, LongSupplier nanoClock) {
    synchronized (monitor) {
      while (true) {
        long earliest = Long.MAX_VALUE;
        long now = nanoClock.getAsLong();
        for (Open o : open) {
          if (o.sender().actionable() || now - o.sender().deadlineNanos() >= 0) {
            return;
          }
          earliest = Math.min(earliest, o.sender().deadlineNanos() - now);
        }
        try {
          monitor.wait(Math.max(1, earliest / 1_000_000));
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
