package io.kiln.pools.impl;

import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.RequestContext;
import io.kiln.pools.SequenceSpec;
import io.kiln.pools.Tensor;
import io.kiln.runtime.Futures;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sequences of a sequence pool ({@link SequenceSpec}), in front of its {@link PoolDispatcher}: which worker holds
 * each open sequence's state (chosen at {@code sequence_start}: the live worker holding the fewest), one request of a
 * sequence at a time (the next waits here until the previous one is answered, so a sequence runs in order and never
 * twice in one batch), the idle sweep, and what the pool tells a client whose sequence is unknown, lost or refused.
 *
 * <p>Errors of {@link #submit}: INVALID_INPUT naming {@code parameters.sequence_id} (missing, malformed, or no open
 * sequence of that id without {@code sequence_start}), {@link CapacityExceededException} when
 * {@code max_sequences} are open or as many requests wait behind their sequences' running ones as the pool's
 * {@code max_queued} (retry after 1 s), UNAVAILABLE "sequence 'X' was lost: why" once the worker holding
 * it failed or restarted (never a silent restart from the initial state), and whatever the dispatcher answers.
 *
 * <p>Meters (tags of the pool): gauge {@code kiln.pool.sequences.open}; counters {@code kiln.pool.sequences.started},
 * {@code .ended}, {@code .expired} (idle past {@code idle_timeout}), {@code .lost} (their worker failed).
 *
 * <p>Not thread-safe: the dispatcher's thread only (the pool manager's context); the sweep's timer runs there.
 */
public final class PoolSequences implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(PoolSequences.class);
  private static final Duration RETRY_AFTER = Duration.ofSeconds(1);

  private final String model;
  private final SequenceSpec spec;
  private final boolean alone;
  private final PoolDispatcher dispatcher;
  private final Timers timers;
  private final LongSupplier clock;
  private final long idleNanos;
  private final int maxWaiting;
  private int waiting; // requests held here behind their sequence's running one
  private final Map<String, Seq> open = new LinkedHashMap<>();
  private final Map<String, Integer> perWorker = new HashMap<>();
  /** Why recently lost sequences were lost, so that their next request says so; bounded like the open ones. */
  private final Map<String, String> lost;
  private final MeterRegistry registry;
  private final List<Meter> meters = new ArrayList<>();
  private final Counter started;
  private final Counter ended;
  private final Counter expired;
  private final Counter lostCount;
  private volatile int openCount;
  private long timer = -1;
  private boolean closed;

  private static final class Seq {
    final String id;
    final String worker;
    final ArrayDeque<Waiting> waiting = new ArrayDeque<>();
    boolean running;
    boolean hasState; // a start ran on its worker
    long usedNanos;

    Seq(String id, String worker, long now) {
      this.id = id;
      this.worker = worker;
      this.usedNanos = now;
    }
  }

  private record Waiting(InferenceRequest request, RequestContext context, boolean validated, boolean start,
                         boolean end, CompletableFuture<List<Tensor>> answer) {
  }

  /**
   * @param model names the deployment in messages
   * @param alone whether a state input is passed whole (its spec fixes the first dimension): each request then runs
   *     alone; otherwise requests of different sequences on one worker batch together, their states stacked
   * @param maxWaiting most requests held back here at once (the pool's {@code max_queued}): more are refused
   * @param nanoClock the clock of the idle timeout
   */
  public PoolSequences(String model, SequenceSpec spec, boolean alone, int maxWaiting, PoolDispatcher dispatcher,
                       Timers timers, LongSupplier nanoClock, MeterRegistry registry, Tags tags) {
    this.model = model;
    this.maxWaiting = maxWaiting;
    this.spec = spec;
    this.alone = alone;
    this.dispatcher = dispatcher;
    this.timers = timers;
    this.clock = nanoClock;
    this.idleNanos = spec.idleTimeout().toNanos();
    int keep = spec.maxSequences();
    this.lost = new LinkedHashMap<>() {
      @Override
      protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
        return size() > keep;
      }
    };
    this.registry = registry;
    meters.add(Gauge.builder("kiln.pool.sequences.open", this, s -> s.openCount)
        .description("Sequences open in the pool (their state held by a worker)").tags(tags).register(registry));
    started = counter("kiln.pool.sequences.started", "Sequences started (sequence_start)", tags);
    ended = counter("kiln.pool.sequences.ended", "Sequences ended by their client (sequence_end)", tags);
    expired = counter("kiln.pool.sequences.expired", "Sequences freed after sequence.idle_timeout_ms without a request",
        tags);
    lostCount = counter("kiln.pool.sequences.lost", "Sequences lost with the worker that held their state", tags);
    dispatcher.pinToWorkers();
    armSweep();
  }

  private Counter counter(String name, String description, Tags tags) {
    Counter c = Counter.builder(name).description(description).tags(tags).register(registry);
    meters.add(c);
    return c;
  }

  /** Sequences open now. Callable from any thread. */
  public int openCount() {
    return openCount;
  }

  /**
   * Queues a sequence's request behind the sequence's earlier ones; completes as the class comment says. May be
   * complete on return.
   */
  public CompletableFuture<List<Tensor>> submit(InferenceRequest request, RequestContext context, boolean validated) {
    String id;
    boolean start;
    boolean end;
    try {
      id = SequenceSpec.idOf(request.parameters());
      start = SequenceSpec.flag(request.parameters(), SequenceSpec.SEQUENCE_START);
      end = SequenceSpec.flag(request.parameters(), SequenceSpec.SEQUENCE_END);
    } catch (InferenceException e) {
      return CompletableFuture.failedFuture(e);
    }
    if (id == null) {
      return CompletableFuture.failedFuture(InferenceException.invalid("parameters." + SequenceSpec.SEQUENCE_ID
          + ": required: model '" + model + "' keeps state between requests (a sequence model); send it with every"
          + " request, and " + SequenceSpec.SEQUENCE_START + ": true on a sequence's first"));
    }
    if (closed) {
      return CompletableFuture.failedFuture(InferenceException.unavailable("pool is closed"));
    }
    long now = clock.getAsLong();
    Seq s = open.get(id);
    if (s != null && dispatcher.channel(s.worker) == null) { // scaled down or retired: its states went with it
      markLost(s, "worker " + s.worker + " left the pool");
      s = null;
    }
    if (s == null) {
      if (!start) {
        String why = lost.get(id);
        return CompletableFuture.failedFuture(why != null ? lostError(id, why) : InferenceException.invalid(
            "parameters." + SequenceSpec.SEQUENCE_ID + ": no open sequence '" + id + "' on model '" + model
                + "' (never started, ended, or idle longer than its sequence.idle_timeout_ms, "
                + spec.idleTimeout().toMillis() + "); start it with " + SequenceSpec.SEQUENCE_START + ": true"));
      }
      if (open.size() >= spec.maxSequences()) {
        return CompletableFuture.failedFuture(new CapacityExceededException("model '" + model + "' holds "
            + open.size() + " open sequences, its sequence.max_sequences; end some (" + SequenceSpec.SEQUENCE_END
            + ") or retry later", RETRY_AFTER));
      }
      String worker = leastLoaded();
      if (worker == null) {
        return CompletableFuture.failedFuture(InferenceException.unavailable("model '" + model
            + "' has no worker ready to hold a new sequence"));
      }
      s = new Seq(id, worker, now);
      open.put(id, s);
      perWorker.merge(worker, 1, Integer::sum);
      lost.remove(id);
      openCount = open.size();
    }
    if (s.running && waiting >= maxWaiting) {
      return CompletableFuture.failedFuture(new CapacityExceededException(waiting + " requests of model '" + model
          + "' wait behind their sequences' running ones (queue.max_queued); send a sequence's next request once its"
          + " previous one is answered", RETRY_AFTER));
    }
    if (start) {
      started.increment();
    }
    Waiting w = new Waiting(request, context, validated, start, end, new CompletableFuture<>());
    s.waiting.add(w);
    waiting++;
    pump(s);
    return w.answer;
  }

  private String leastLoaded() {
    String best = null;
    int fewest = Integer.MAX_VALUE;
    for (String w : dispatcher.liveWorkerIds()) {
      int n = perWorker.getOrDefault(w, 0);
      if (n < fewest || n == fewest && w.compareTo(best) < 0) {
        best = w;
        fewest = n;
      }
    }
    return best;
  }

  private void pump(Seq s) {
    if (s.running || s.waiting.isEmpty()) {
      return;
    }
    Waiting w = s.waiting.poll();
    waiting--;
    s.running = true;
    dispatcher.submit(w.request, w.context, w.validated, null, s.worker, alone)
        .whenComplete((out, err) -> finished(s, w, out, err));
  }

  private void finished(Seq s, Waiting w, List<Tensor> out, Throwable err) {
    s.running = false;
    s.usedNanos = clock.getAsLong();
    boolean current = open.get(s.id) == s;
    if (err == null) {
      s.hasState = true;
      if (w.end && current) {
        close(s);
        ended.increment();
        failWaiting(s, InferenceException.invalid("sequence '" + s.id + "' ended (" + SequenceSpec.SEQUENCE_END
            + ") before this request ran"));
      }
      w.answer.complete(out);
    } else {
      Throwable cause = Futures.unwrapCompletion(err);
      String why = lostWhy(s, cause);
      if (why != null) {
        if (current) {
          markLost(s, why);
        }
        w.answer.completeExceptionally(lostError(s.id, why));
      } else {
        if (current && !s.hasState) { // its start never ran: nothing is held, the client may start again
          close(s);
          failWaiting(s, InferenceException.invalid("parameters." + SequenceSpec.SEQUENCE_ID + ": sequence '" + s.id
              + "' did not start: its first request failed"));
        }
        w.answer.completeExceptionally(cause);
      }
    }
    if (open.get(s.id) == s) {
      pump(s);
    }
  }

  // The worker holding its state failed under the request, or no longer holds it (it restarted unseen).
  private static String lostWhy(Seq s, Throwable cause) {
    if (cause instanceof InferenceException ie) {
      String m = ie.getMessage() == null ? "" : ie.getMessage();
      if (ie.kind() == InferenceException.Kind.INVALID_INPUT && m.startsWith(SequenceStates.LOST)) {
        return m.substring(SequenceStates.LOST.length());
      }
      if (ie.kind() == InferenceException.Kind.UNAVAILABLE && m.startsWith("worker " + s.worker + " failed")) {
        return m;
      }
    }
    return null;
  }

  private InferenceException lostError(String id, String why) {
    return InferenceException.unavailable("sequence '" + id + "' was lost: " + why + "; start a new sequence with "
        + SequenceSpec.SEQUENCE_START + ": true");
  }

  /**
   * The worker {@code workerId} failed or is being restarted: the state of every sequence it held is gone. Each
   * such sequence's waiting requests, and its next one, fail UNAVAILABLE naming it.
   */
  public void workerLost(String workerId, String why) {
    for (Seq s : new ArrayList<>(open.values())) {
      if (s.worker.equals(workerId)) {
        markLost(s, "worker " + workerId + " failed (" + why + ")");
      }
    }
  }

  private void markLost(Seq s, String why) {
    close(s);
    lost.put(s.id, why);
    lostCount.increment();
    LOG.warn("model {}: sequence '{}' lost: {}", model, s.id, why);
    failWaiting(s, lostError(s.id, why));
  }

  private void close(Seq s) {
    if (open.remove(s.id, s)) {
      perWorker.computeIfPresent(s.worker, (k, n) -> n <= 1 ? null : n - 1);
      openCount = open.size();
    }
  }

  private void failWaiting(Seq s, InferenceException e) {
    for (Waiting w = s.waiting.poll(); w != null; w = s.waiting.poll()) {
      waiting--;
      w.answer.completeExceptionally(e);
    }
  }

  /**
   * Frees every sequence idle (nothing running or waiting) for at least {@code idle_timeout} at {@code now}, telling
   * the workers to drop their states; returns how many. The pool's timer runs it every quarter of the idle timeout
   * (at most every second).
   */
  public int sweep(long now) {
    Map<String, List<String>> byWorker = new HashMap<>();
    for (Seq s : new ArrayList<>(open.values())) {
      if (!s.running && s.waiting.isEmpty() && now - s.usedNanos >= idleNanos) {
        close(s);
        expired.increment();
        byWorker.computeIfAbsent(s.worker, k -> new ArrayList<>()).add(s.id);
      }
    }
    int n = 0;
    for (Map.Entry<String, List<String>> e : byWorker.entrySet()) {
      n += e.getValue().size();
      WorkerChannel c = dispatcher.channel(e.getKey());
      if (c != null) {
        c.endSequences(e.getValue()).whenComplete((held, err) -> {
          if (err != null) {
            LOG.debug("model {}: freeing {} expired sequences on {} failed: {}", model, e.getValue().size(),
                e.getKey(), err.toString());
          }
        });
      }
    }
    if (n > 0) {
      LOG.debug("model {}: {} sequences expired after {} ms idle", model, n, spec.idleTimeout().toMillis());
    }
    return n;
  }

  private void armSweep() {
    if (closed) {
      return;
    }
    long period = Math.max(Duration.ofMillis(10).toNanos(), Math.min(idleNanos / 4, Duration.ofSeconds(1).toNanos()));
    timer = timers.schedule(period, () -> {
      timer = -1;
      if (!closed) {
        sweep(clock.getAsLong());
        armSweep();
      }
    });
  }

  /** Stops the sweep, fails every waiting request UNAVAILABLE "pool is closed" and removes the meters. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (timer >= 0) {
      timers.cancel(timer);
    }
    for (Seq s : open.values()) {
      failWaiting(s, InferenceException.unavailable("pool is closed"));
    }
    open.clear();
    openCount = 0;
    meters.forEach(registry::remove);
  }
}
