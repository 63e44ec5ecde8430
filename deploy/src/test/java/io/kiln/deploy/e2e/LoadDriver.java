package io.kiln.deploy.e2e;

import io.kiln.testkit.OipRequest;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;

/**
 * HTTP traffic for reliability scenarios, counting every request: closed loop (N clients, each sending its
 * next request when the last was answered) or open loop (a fixed rate, latency measured from the intended
 * send time, so a stalled server is not hidden). Each answer is classified: success (200 and the body passes
 * the check), clean (503 with a JSON error and {@code Retry-After}, or 504 with a JSON error), or lost (no
 * answer by the deadline plus slack, a transport error, or any other answer).
 */
final class LoadDriver {

  /**
   * One request to send: its path, body (JSON, or JSON + binary tensors when {@code headerLength} is set), and
   * text a successful answer must contain (null: any).
   */
  record Request(String path, byte[] body, String headerLength, String expect) {
  }

  /** What happened to every request of one run. */
  static final class Outcome {
    final AtomicLong sent = new AtomicLong();
    final AtomicLong ok = new AtomicLong();
    final AtomicLong clean = new AtomicLong();
    final AtomicLong lost = new AtomicLong();
    final Map<Integer, AtomicLong> byStatus = new ConcurrentHashMap<>();
    final ConcurrentLinkedQueue<Long> okMicros = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<Long> cleanMicros = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<String> lostReasons = new ConcurrentLinkedQueue<>();
    /** Clean failures by status and error message (digits masked, at most 16 kinds): why requests were refused. */
    final Map<String, AtomicLong> cleanByReason = new ConcurrentHashMap<>();
    volatile long wallNanos;

    double throughput() {
      return ok.get() / Math.max(1e-9, wallNanos / 1e9);
    }

    static long percentileMillis(ConcurrentLinkedQueue<Long> micros, double p) {
      long[] v = micros.stream().mapToLong(Long::longValue).sorted().toArray();
      if (v.length == 0) {
        return 0;
      }
      return Math.round(v[(int) Math.min(v.length - 1, Math.ceil(p / 100 * v.length) - 1)] / 1000.0);
    }

    double okP99Millis() {
      return percentileMillis(okMicros, 99);
    }

    double okP50Millis() {
      return percentileMillis(okMicros, 50);
    }

    double cleanP99Millis() {
      return percentileMillis(cleanMicros, 99);
    }

    Map<String, Object> figures() {
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("sent", sent.get());
      f.put("succeeded", ok.get());
      f.put("failedCleanly", clean.get());
      f.put("lost", lost.get());
      Map<String, Long> codes = new java.util.TreeMap<>();
      byStatus.forEach((k, v) -> codes.put(Integer.toString(k), v.get()));
      f.put("byStatus", codes);
      f.put("seconds", Math.round(wallNanos / 1e7) / 100.0);
      f.put("okPerSecond", Math.round(throughput()));
      f.put("okP50Ms", okP50Millis());
      f.put("okP99Ms", okP99Millis());
      f.put("cleanP99Ms", cleanP99Millis());
      if (!lostReasons.isEmpty()) {
        f.put("lostExamples", lostReasons.stream().limit(5).toList());
      }
      if (!cleanByReason.isEmpty()) {
        Map<String, Long> reasons = new java.util.TreeMap<>();
        cleanByReason.forEach((k, v) -> reasons.put(k, v.get()));
        f.put("failedCleanlyByReason", reasons);
      }
      return f;
    }
  }

  /**
   * The client's callbacks run on a fixed pool: the JDK's default (a cached pool) grows a thread per
   * concurrent answer while latency spikes, which a test counting the process's threads would take for the nodes'.
   */
  private static final ExecutorService CALLBACKS = Executors.newFixedThreadPool(4, r -> {
    Thread t = new Thread(r, "load-driver-callbacks");
    t.setDaemon(true);
    return t;
  });

  private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(10)).executor(CALLBACKS).build();
  private final Duration deadline;
  private final Duration slack;

  /** @param deadline the gateway's request deadline; an answer later than it plus {@code slack} is lost */
  LoadDriver(Duration deadline, Duration slack) {
    this.deadline = deadline;
    this.slack = slack;
  }

  /** Closed loop: {@code clients} loops over their ports for {@code duration}; blocks until all answered. */
  Outcome closed(List<Integer> ports, int clients, Duration duration, IntFunction<Request> next) {
    Outcome o = new Outcome();
    long start = System.nanoTime();
    long end = start + duration.toNanos();
    List<CompletableFuture<Void>> loops = new ArrayList<>();
    AtomicLong n = new AtomicLong();
    for (int c = 0; c < clients; c++) {
      int port = ports.get(c % ports.size());
      loops.add(loop(port, end, o, next, n));
    }
    CompletableFuture.allOf(loops.toArray(CompletableFuture[]::new)).join();
    o.wallNanos = System.nanoTime() - start;
    return o;
  }

  /** Closed-loop load that runs until {@link Running#stop()}: for changes that take as long as they take. */
  final class Running {
    private final Outcome outcome = new Outcome();
    private final long start = System.nanoTime();
    private volatile boolean stopped;
    private final CompletableFuture<Void> loops;

    private Running(List<Integer> ports, int clients, IntFunction<Request> next) {
      List<CompletableFuture<Void>> all = new ArrayList<>();
      AtomicLong n = new AtomicLong();
      for (int c = 0; c < clients; c++) {
        all.add(loop(ports.get(c % ports.size()), () -> stopped, outcome, next, n));
      }
      loops = CompletableFuture.allOf(all.toArray(CompletableFuture[]::new));
    }

    /** What has happened so far (requests still in flight are counted as sent only). */
    Outcome sofar() {
      return outcome;
    }

    /** Stops sending new requests; those in flight go on. Returns the live count. */
    Outcome stopSending() {
      stopped = true;
      return outcome;
    }

    /** Stops sending, waits until every request was answered, returns the count. */
    Outcome stop() {
      stopped = true;
      loops.join();
      outcome.wallNanos = System.nanoTime() - start;
      return outcome;
    }
  }

  /** Starts {@code clients} closed loops over {@code ports} that run until stopped. */
  Running start(List<Integer> ports, int clients, IntFunction<Request> next) {
    return new Running(ports, clients, next);
  }

  private CompletableFuture<Void> loop(int port, long end, Outcome o, IntFunction<Request> next, AtomicLong n) {
    return loop(port, () -> System.nanoTime() >= end, o, next, n);
  }

  private CompletableFuture<Void> loop(int port, java.util.function.BooleanSupplier done, Outcome o,
                                       IntFunction<Request> next, AtomicLong n) {
    if (done.getAsBoolean()) {
      return CompletableFuture.completedFuture(null);
    }
    long sentAt = System.nanoTime();
    return send(port, next.apply((int) n.getAndIncrement()), sentAt, o)
        .thenCompose(v -> loop(port, done, o, next, n));
  }

  /** Open loop at {@code perSecond}, spread over {@code ports}; blocks until every request was answered. */
  Outcome open(List<Integer> ports, double perSecond, Duration duration, IntFunction<Request> next) {
    Outcome o = new Outcome();
    long interval = (long) (1e9 / perSecond);
    long start = System.nanoTime();
    long total = (long) (perSecond * duration.toNanos() / 1e9);
    List<CompletableFuture<Void>> all = new ArrayList<>();
    for (long i = 0; i < total; i++) {
      long intended = start + i * interval;
      for (long wait = intended - System.nanoTime(); wait > 0; wait = intended - System.nanoTime()) {
        LockSupport.parkNanos(wait); // pacing the generator, not waiting for a condition
      }
      all.add(send(ports.get((int) (i % ports.size())), next.apply((int) i), intended, o));
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
    o.wallNanos = System.nanoTime() - start;
    return o;
  }

  private CompletableFuture<Void> send(int port, Request r, long since, Outcome o) {
    o.sent.incrementAndGet();
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + r.path()))
        .timeout(deadline.plus(slack)).POST(HttpRequest.BodyPublishers.ofByteArray(r.body()));
    if (r.headerLength() != null) {
      b.header("Content-Type", "application/octet-stream").header("Inference-Header-Content-Length", r.headerLength());
    } else {
      b.header("Content-Type", "application/json");
    }
    HttpRequest req = b.build();
    return client.sendAsync(req, HttpResponse.BodyHandlers.ofString()).handle((resp, err) -> {
      long micros = TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - since);
      if (err != null) {
        Throwable cause = err instanceof java.util.concurrent.CompletionException && err.getCause() != null
            ? err.getCause() : err;
        lost(o, cause instanceof HttpTimeoutException ? "no answer within the deadline + slack" : cause.toString());
        return null;
      }
      o.byStatus.computeIfAbsent(resp.statusCode(), k -> new AtomicLong()).incrementAndGet();
      boolean late = micros > TimeUnit.NANOSECONDS.toMicros(deadline.plus(slack).toNanos());
      String body = resp.body();
      if (late) {
        lost(o, "answered " + resp.statusCode() + " after " + micros / 1000 + " ms");
      } else if (resp.statusCode() == 200 && (r.expect() == null || body.replace(" ", "").contains(r.expect()))) {
        o.ok.incrementAndGet();
        o.okMicros.add(micros);
      } else if ((resp.statusCode() == 503 && resp.headers().firstValue("Retry-After").isPresent()
          || resp.statusCode() == 504) && body.contains("\"error\"")) {
        o.clean.incrementAndGet();
        o.cleanMicros.add(micros);
        cleanReason(o, resp.statusCode(), body);
      } else {
        lost(o, resp.statusCode() + " " + body.substring(0, Math.min(200, body.length())));
      }
      return null;
    });
  }

  private static void cleanReason(Outcome o, int status, String body) {
    int at = body.indexOf("\"error\"");
    String why = at < 0 ? body : body.substring(at + 7).replaceFirst("^\\s*:\\s*\"", "");
    why = status + " " + why.substring(0, Math.min(120, why.length())).replaceAll("[0-9]+", "N").replaceAll("\"\\s*}?$", "");
    AtomicLong n = o.cleanByReason.get(why);
    if (n == null && o.cleanByReason.size() >= 16) {
      why = status + " (other)";
    }
    o.cleanByReason.computeIfAbsent(why, k -> new AtomicLong()).incrementAndGet();
  }

  private static void lost(Outcome o, String why) {
    o.lost.incrementAndGet();
    if (o.lostReasons.size() < 20) {
      o.lostReasons.add(why);
    }
  }

  /**
   * A request of one FP32 row {@code [v, w]} for a model whose input is {@code x} FP32 [-1, 2]; success means
   * the answer echoes it. A NaN goes as binary tensor data (JSON has no NaN).
   */
  static Request row(String model, float v, float w) {
    String path = "/v2/models/" + model + "/infer";
    if (Float.isNaN(v) || Float.isNaN(w)) {
      OipRequest.Binary b = OipRequest.fp32("x", new long[] {1, 2}, v, w).binary();
      return new Request(path, b.body(), b.headerLengthValue(), null);
    }
    String data = "[" + v + "," + w + "]";
    return new Request(path, OipRequest.fp32("x", new long[] {1, 2}, v, w).jsonBytes(), null, "\"data\":" + data);
  }
}
