package io.kiln.serve.controller;

import static org.awaitility.Awaitility.await;

import io.kiln.pools.InferenceResponse;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Continuous traffic to an identity deployment: {@code concurrency} loops, each sending its next request
 * as soon as the previous one answered, routed as the gateway routes ({@link ServeNodes#send}). Counts
 * answers per version and keeps every failure (an error, or an answer that is not the echo of its input).
 */
final class Traffic implements AutoCloseable {

  private final ServeNodes nodes;
  private final ServeNodes.Node via;
  private final String name;
  private final AtomicBoolean stopped = new AtomicBoolean();
  private final AtomicInteger running = new AtomicInteger();
  private final AtomicInteger seq = new AtomicInteger();
  private final AtomicLong ok = new AtomicLong();
  private final Map<String, AtomicLong> byVersion = new ConcurrentHashMap<>();
  private final List<String> failures = new CopyOnWriteArrayList<>();
  // Sends hop through here so a loop of immediate failures cannot recurse.
  private final ExecutorService sender = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "test-traffic");
    t.setDaemon(true);
    return t;
  });

  Traffic(ServeNodes nodes, ServeNodes.Node via, String name, int concurrency) {
    this.nodes = nodes;
    this.via = via;
    this.name = name;
    for (int i = 0; i < concurrency; i++) {
      running.incrementAndGet();
      sender.execute(this::next);
    }
  }

  private void next() {
    if (stopped.get()) {
      running.decrementAndGet();
      return;
    }
    int s = seq.incrementAndGet() % 1000;
    nodes.send(via, name, ServeNodes.row(s)).whenComplete((r, err) -> {
      record(s, r, err);
      sender.execute(this::next);
    });
  }

  private void record(int s, InferenceResponse r, Throwable err) {
    if (err != null) {
      failures.add(err.toString());
    } else if (!ServeNodes.echoes(r, s)) {
      failures.add("wrong answer from " + r.modelVersion() + " for input " + s);
    } else {
      ok.incrementAndGet();
      byVersion.computeIfAbsent(r.modelVersion(), v -> new AtomicLong()).incrementAndGet();
    }
  }

  long ok() {
    return ok.get();
  }

  long answeredBy(String version) {
    AtomicLong n = byVersion.get(version);
    return n == null ? 0 : n.get();
  }

  List<String> failures() {
    return List.copyOf(failures);
  }

  /** Waits until {@code more} further requests succeeded. */
  void awaitMore(long more) {
    long target = ok.get() + more;
    await().atMost(ServeNodes.WAIT).until(() -> ok.get() >= target || failures.size() > 100);
  }

  /** Stops sending and waits for the requests in flight to answer. */
  @Override
  public void close() {
    stopped.set(true);
    await().atMost(ServeNodes.WAIT).until(() -> running.get() == 0);
    sender.shutdown();
    try {
      sender.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
