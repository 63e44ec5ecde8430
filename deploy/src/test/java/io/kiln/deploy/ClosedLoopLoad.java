package io.kiln.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.testkit.OipRequest;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * Closed-loop OIP traffic through one gateway, every request counted: each client sends one {@code [1,2]} FP32
 * request {@code [a, -v]} ({@code v} unique to the request; {@code a} is {@code v}, or the milliseconds a
 * {@code builtin:sleep} model is to hold its worker), waits for its answer, classifies it, sends the next. Clients come
 * in {@link Group}s: a model, and optionally a node its requests are pinned to with the {@code kiln-node} header (until
 * {@link #unpin} lets them route freely). A request counts in the phase during which it ended (so one in flight when a
 * node is killed counts with the kill), as exactly one of: succeeded (200, its own data echoed, within
 * the deadline plus slack), failed cleanly (503 with {@code Retry-After}, or 504, with an {@code error} body, within
 * the deadline plus slack), or lost (anything else: no answer in time, a reset, another status, a wrong body).
 * The counts go to a JSON file, rewritten whole every 200 ms and once more at {@link #stop}.
 */
final class ClosedLoopLoad {

  static final ObjectMapper JSON = new ObjectMapper();
  /** How long a client pauses after a failure, so that a client pinned to a dead node does not spin. */
  static final Duration BACKOFF = Duration.ofMillis(50);

  /** The traffic to send. */
  record Options(URI gateway, List<Group> groups, Duration deadline, Duration slack, Path out) {
  }

  /**
   * {@code clients} closed-loop clients of {@code model}.
   *
   * @param pinnedTo the node their requests name in {@code kiln-node}, or null to route freely
   * @param holdMillis the first element of their requests, for a {@code builtin:sleep} model; 0 for an echo of
   *     unique values
   */
  record Group(String model, String pinnedTo, int clients, int holdMillis) {
    String kind() {
      return model + (pinnedTo == null ? " unpinned" : " pinned " + pinnedTo);
    }
  }

  /** The outcomes of the requests sent during one phase. */
  static final class Tally {
    final AtomicLong ok = new AtomicLong();
    final AtomicLong clean = new AtomicLong();
    final AtomicLong lost = new AtomicLong();
    final AtomicLong maxMillis = new AtomicLong();
    final Map<String, AtomicLong> failures = new ConcurrentHashMap<>();
    final Map<String, AtomicLong> ranOn = new ConcurrentHashMap<>();
    final ConcurrentLinkedQueue<String> examples = new ConcurrentLinkedQueue<>();

    ObjectNode toJson() {
      ObjectNode o = JSON.createObjectNode();
      o.put("ended", ok.get() + clean.get() + lost.get()).put("succeeded", ok.get()).put("failedCleanly", clean.get())
          .put("lost", lost.get()).put("maxMillis", maxMillis.get());
      o.set("failures", JSON.valueToTree(sorted(failures)));
      o.set("ranOn", JSON.valueToTree(sorted(ranOn)));
      o.set("examples", JSON.valueToTree(List.copyOf(examples)));
      return o;
    }

    private static Map<String, Long> sorted(Map<String, AtomicLong> m) {
      Map<String, Long> out = new TreeMap<>();
      m.forEach((k, v) -> out.put(k, v.get()));
      return out;
    }

    void fail(boolean cleanly, String cause, String example) {
      (cleanly ? clean : lost).incrementAndGet();
      failures.computeIfAbsent(cause, k -> new AtomicLong()).incrementAndGet();
      if (examples.size() < 10) {
        examples.add(cause + ": " + example);
      }
    }
  }

  private final Options options;
  private final HttpClient http;
  private final Map<String, Tally> phases = new ConcurrentHashMap<>();
  private final List<String> order = new CopyOnWriteArrayList<>();
  private final Set<String> unpinnedNodes = ConcurrentHashMap.newKeySet();
  private final AtomicLong sent = new AtomicLong();
  private final AtomicLong ended = new AtomicLong();
  /** Requests in flight with a {@code kiln-node} pin, by group ({@link Group#kind}): request number → sent at (nanos). */
  private final Map<String, Map<Long, Long>> pinnedInFlight = new ConcurrentHashMap<>();
  /**
   * Held (shared) by a client from choosing a pin to registering its request as in flight, and exclusively by
   * {@link #unpin}: once that returns, no request pinned to the node starts, and all in flight are registered.
   */
  private final ReentrantReadWriteLock pinning = new ReentrantReadWriteLock();
  private final AtomicLong requestNumbers = new AtomicLong();
  private final List<Thread> clients = new ArrayList<>();
  private final Thread writer;
  private volatile String phase;
  private volatile boolean stopped;

  ClosedLoopLoad(Options options, String firstPhase) {
    this.options = options;
    this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(options.slack()).build();
    phase(firstPhase);
    int c = 0;
    for (Group g : options.groups()) {
      for (int i = 0; i < g.clients(); i++) {
        clients.add(client(c++, g));
      }
    }
    writer = daemon("load-counts", () -> {
      while (!stopped) {
        write();
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
      }
    });
  }

  void start() {
    clients.forEach(Thread::start);
    writer.start();
  }

  /** Requests that end from now on count in {@code name}. */
  synchronized void phase(String name) {
    if (!phases.containsKey(name)) {
      phases.put(name, new Tally());
      order.add(name);
    }
    phase = name;
  }

  /** Clients pinned to {@code node} route their next requests freely; returns how many pinned ones are in flight, by group. */
  Map<String, Integer> unpin(String node) {
    pinning.writeLock().lock();
    try {
      unpinnedNodes.add(node);
      return pinnedInFlight(node);
    } finally {
      pinning.writeLock().unlock();
    }
  }

  /** The requests pinned to {@code node} in flight now, by group. */
  Map<String, Integer> pinnedInFlight(String node) {
    Map<String, Integer> out = new TreeMap<>();
    for (Group g : options.groups()) {
      if (node.equals(g.pinnedTo())) {
        out.put(g.kind(), inFlight(g.kind()).size());
      }
    }
    return out;
  }

  /** How long the oldest request of group {@code kind} in flight has been, in ms; -1 if none is. */
  long oldestInFlightMillis(String kind) {
    long now = System.nanoTime();
    return inFlight(kind).values().stream().mapToLong(t -> TimeUnit.NANOSECONDS.toMillis(now - t)).max().orElse(-1);
  }

  private Map<Long, Long> inFlight(String kind) {
    return pinnedInFlight.computeIfAbsent(kind, k -> new ConcurrentHashMap<>());
  }

  /** Stops sending, waits for every request in flight to end (each within the deadline plus slack), writes the counts. */
  void stop() throws InterruptedException {
    stopped = true;
    for (Thread t : clients) {
      t.join(options.deadline().plus(options.slack()).multipliedBy(2).toMillis());
    }
    writer.join(5_000);
    write();
  }

  private Thread client(int index, Group g) {
    return daemon("load-" + index + "-" + g.kind().replace(' ', '-'), () -> {
      long i = 0;
      while (!stopped) {
        // Exact in FP32 (below 2^24), unique per client and request.
        float v = index * 100_000f + (++i % 100_000);
        if (!send(g, g.holdMillis() > 0 ? g.holdMillis() : v, v)) {
          LockSupport.parkNanos(BACKOFF.toNanos());
        }
      }
    });
  }

  private static Thread daemon(String name, Runnable body) {
    Thread t = new Thread(body, name);
    t.setDaemon(true);
    return t;
  }

  /** Sends one request and counts its outcome; false if it failed. */
  private boolean send(Group g, float a, float v) {
    long number = requestNumbers.incrementAndGet();
    String pin;
    pinning.readLock().lock();
    try {
      pin = g.pinnedTo() != null && !unpinnedNodes.contains(g.pinnedTo()) ? g.pinnedTo() : null;
      sent.incrementAndGet();
      if (pin != null) {
        inFlight(g.kind()).put(number, System.nanoTime());
      }
    } finally {
      pinning.readLock().unlock();
    }
    try {
      return sendAndCount(g, a, v, pin);
    } finally {
      if (pin != null) {
        inFlight(g.kind()).remove(number);
      }
      ended.incrementAndGet();
    }
  }

  /** How one request ended: {@code node} where it ran (succeeded), else {@code cause} and an example. */
  private record Outcome(boolean ok, boolean clean, String node, String cause, String example) {
    static Outcome lost(String cause, String example) {
      return new Outcome(false, false, null, cause, example);
    }
  }

  private boolean sendAndCount(Group g, float a, float v, String pin) {
    String data = "[" + a + "," + (-v) + "]";
    String body = OipRequest.fp32("x", new long[] {1, 2}, a, -v).json();
    Duration limit = options.deadline().plus(options.slack());
    HttpRequest.Builder b = HttpRequest.newBuilder(options.gateway().resolve("/v2/models/" + g.model() + "/infer"))
        .timeout(limit).header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
    if (pin != null) {
      b.header("kiln-node", pin);
    }
    long start = System.nanoTime();
    Outcome o = outcome(b.build(), data, limit, " (" + g.kind() + ")");
    // Counted in the phase it ended in: a request in flight when a node dies belongs to that node's phase.
    Tally t = phases.get(phase);
    t.maxMillis.accumulateAndGet(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), Math::max);
    if (o.ok()) {
      t.ranOn.computeIfAbsent(o.node(), k -> new AtomicLong()).incrementAndGet();
      t.ok.incrementAndGet();
    } else {
      t.fail(o.clean(), o.cause(), o.example());
    }
    return o.ok();
  }

  private Outcome outcome(HttpRequest request, String data, Duration limit, String kind) {
    long start = System.nanoTime();
    try {
      HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      int code = r.statusCode();
      if (tookMs > limit.toMillis()) {
        return Outcome.lost(code + " after the deadline plus slack" + kind, tookMs + " ms");
      }
      if (code == 200 && r.body().replace(" ", "").contains("\"data\":" + data)) {
        String node = JSON.readTree(r.body()).path("parameters").path("kiln_node").asText("?");
        return new Outcome(true, false, node, null, null);
      }
      boolean retryAfter = r.headers().firstValue("Retry-After").isPresent();
      boolean clean = (code == 503 && retryAfter || code == 504) && r.body().contains("\"error\"");
      String cause = (code == 503 && !retryAfter ? "503 without Retry-After" : Integer.toString(code)) + kind;
      String example = r.body().length() > 300 ? r.body().substring(0, 300) : r.body();
      return new Outcome(false, clean, null, cause, example);
    } catch (HttpTimeoutException e) {
      return Outcome.lost("no answer within " + limit.toMillis() + " ms" + kind, e.toString());
    } catch (ConnectException e) {
      return Outcome.lost("connect failed" + kind, e.toString());
    } catch (IOException e) {
      return Outcome.lost("connection error" + kind, e.toString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      stopped = true;
      return Outcome.lost("interrupted" + kind, e.toString());
    } catch (RuntimeException e) {
      return Outcome.lost("client error" + kind, e.toString());
    }
  }

  /** The counts so far, as the file holds them. */
  ObjectNode counts() {
    ObjectNode o = JSON.createObjectNode();
    o.put("phase", phase).put("stopped", stopped).put("sent", sent.get()).put("inFlight", sent.get() - ended.get());
    o.set("unpinned", JSON.valueToTree(new java.util.TreeSet<>(unpinnedNodes)));
    ObjectNode p = o.putObject("phases");
    for (String name : order) {
      p.set(name, phases.get(name).toJson());
    }
    return o;
  }

  private synchronized void write() {
    try {
      Path tmp = options.out().resolveSibling(options.out().getFileName() + ".tmp");
      Files.writeString(tmp, JSON.writerWithDefaultPrettyPrinter().writeValueAsString(counts()));
      Files.move(tmp, options.out(), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      System.err.println("load: could not write " + options.out() + ": " + e);
    }
  }
}
