package io.kiln.deploy.e2e;

import io.kiln.loadtest.HttpCall;
import io.kiln.loadtest.LiveRun;
import io.kiln.loadtest.LoadMode;
import io.kiln.loadtest.LoadOptions;
import io.kiln.loadtest.LoadRunner;
import io.kiln.loadtest.ProgressListener;
import io.kiln.loadtest.RequestSource;
import io.kiln.loadtest.ResponseCheck;
import io.kiln.loadtest.RunResult;
import io.kiln.testkit.OipRequest;
import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntFunction;

/**
 * HTTP traffic for reliability scenarios, every request counted, sent by the loadtest module's generator
 * ({@link LoadRunner}): closed loop (N clients, each sending its next request when the last was answered) or open
 * loop (a fixed rate, latency measured from the intended send time, so a stalled server is not hidden), request
 * {@code i} to port {@code i % ports}. This class is the reliability contract: each answer is judged as success (200
 * and the body passes the request's check), clean (503 with a JSON error and {@code Retry-After}, or 504 with a JSON
 * error), or lost (no answer within the deadline plus slack, a transport error, or any other answer).
 */
final class LoadDriver {

  /**
   * One request to send: its path, body (JSON, or JSON + binary tensors when {@code headerLength} is set), and
   * text a successful answer must contain (null: any).
   */
  record Request(String path, byte[] body, String headerLength, String expect) {
  }

  /** Outcome keys this driver's check gives; the generator's own are {@code timeout}, {@code unfinished}, ... */
  static final String OK = "ok";
  static final String CLEAN = "clean";
  static final String LOST = "lost";
  /** Distinct reasons kept per outcome, beyond which a status's further reasons count as {@code <status> (other)}. */
  private static final int REASONS = 12;
  /** Open loop: connections per gateway, enough that an overload's requests never queue in the generator. */
  private static final int OPEN_CONNECTIONS = 256;

  /** What happened to the requests of one run, or of a running one so far (then counts only). */
  record Outcome(long sent, long ok, long clean, long lost, Map<Integer, Long> byStatus, List<String> lostReasons,
      Map<String, Long> cleanByReason, double seconds, RunResult.Latency okLatency, RunResult.Latency cleanLatency) {

    private static final RunResult.Latency NONE = new RunResult.Latency(0, 0, 0, 0, 0, 0, 0, 0);

    static Outcome of(RunResult r) {
      long ok = r.count(OK);
      long clean = r.count(CLEAN);
      Map<Integer, Long> byStatus = new TreeMap<>();
      if (ok > 0) {
        byStatus.put(200, ok);
      }
      List<String> lostReasons = new ArrayList<>();
      r.examples().forEach((key, kinds) -> kinds.forEach((why, n) -> {
        if (key.equals(OK) || key.equals(CLEAN) || key.equals(LOST)) {
          Integer status = leadingStatus(why);
          if (status != null) {
            byStatus.merge(status, n, Long::sum);
          }
        }
        if (!key.equals(CLEAN) && !key.equals(OK)) {
          lostReasons.add(key + ": " + why + " (" + n + ")");
        }
      }));
      long unfinished = r.count("unfinished");
      if (unfinished > 0) {
        lostReasons.add("unfinished: still unanswered when the run ended (" + unfinished + ")");
      }
      return new Outcome(r.requests(), ok, clean, r.requests() - ok - clean, byStatus, lostReasons,
          r.examples().getOrDefault(CLEAN, Map.of()), r.measuredSeconds(),
          r.latencyByOutcome().getOrDefault(OK, NONE), r.latencyByOutcome().getOrDefault(CLEAN, NONE));
    }

    static Outcome of(LiveRun.Snapshot s) {
      long ok = s.count(OK);
      long clean = s.count(CLEAN);
      return new Outcome(s.issued(), ok, clean, s.completed() - ok - clean, Map.of(), List.of(), Map.of(), 0, NONE,
          NONE);
    }

    /** Requests sent and not answered yet (a running load's). */
    long inFlight() {
      return sent - ok - clean - lost;
    }

    double throughput() {
      return ok / Math.max(1e-9, seconds);
    }

    double okP50Millis() {
      return okLatency.p50();
    }

    double okP99Millis() {
      return okLatency.p99();
    }

    double cleanP99Millis() {
      return cleanLatency.p99();
    }

    Map<String, Object> figures() {
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("sent", sent);
      f.put("succeeded", ok);
      f.put("failedCleanly", clean);
      f.put("lost", lost);
      f.put("byStatus", byStatus);
      f.put("seconds", Math.round(seconds * 100) / 100.0);
      f.put("okPerSecond", Math.round(throughput()));
      f.put("okP50Ms", okP50Millis());
      f.put("okP99Ms", okP99Millis());
      f.put("cleanP99Ms", cleanP99Millis());
      if (!lostReasons.isEmpty()) {
        f.put("lostExamples", lostReasons.stream().limit(5).toList());
      }
      if (!cleanByReason.isEmpty()) {
        f.put("failedCleanlyByReason", cleanByReason);
      }
      return f;
    }
  }

  /** Load that runs until {@link #stop()}: for changes that take as long as they take. */
  static final class Running {
    private final LiveRun run;

    private Running(LiveRun run) {
      this.run = run;
    }

    /** The counts so far (requests in flight are counted as sent only). */
    Outcome sofar() {
      return Outcome.of(run.snapshot());
    }

    /** Stops sending new requests; those in flight go on. Returns the counts at that moment. */
    Outcome stopSending() {
      run.stopIssuing();
      return sofar();
    }

    /** Stops sending, waits until every request was answered, returns the count. */
    Outcome stop() {
      return Outcome.of(run.finish());
    }
  }

  /** One generator for every test of a JVM: its event loops are made once, so thread counts stay level. */
  private static final class Generator {
    static final LoadRunner RUNNER = LoadRunner.create(2);
  }

  private final Duration deadline;
  private final Duration slack;

  /** @param deadline the gateway's request deadline; an answer later than it plus {@code slack} is lost */
  LoadDriver(Duration deadline, Duration slack) {
    this.deadline = deadline;
    this.slack = slack;
  }

  /** Closed loop: {@code clients} loops over their ports for {@code duration}; blocks until all answered. */
  Outcome closed(List<Integer> ports, int clients, Duration duration, IntFunction<Request> next) {
    return Outcome.of(Generator.RUNNER.run(options("closed", ports, next).connections(clients).duration(duration)
        .build(), ProgressListener.NONE));
  }

  /** Closed loop: exactly {@code count} requests from {@code clients} loops; blocks until all answered. */
  Outcome requests(List<Integer> ports, int clients, long count, IntFunction<Request> next) {
    return Outcome.of(Generator.RUNNER.run(options("counted", ports, next).connections(clients)
        .duration(Duration.ofHours(1)).maxRequests(count).build(), ProgressListener.NONE));
  }

  /** Starts {@code clients} closed loops over {@code ports} that run until stopped. */
  Running start(List<Integer> ports, int clients, IntFunction<Request> next) {
    return new Running(Generator.RUNNER.start(options("running", ports, next).connections(clients)
        .duration(Duration.ofHours(1)).build()));
  }

  /** Open loop at {@code perSecond}, spread over {@code ports}; blocks until every request was answered. */
  Outcome open(List<Integer> ports, double perSecond, Duration duration, IntFunction<Request> next) {
    return Outcome.of(Generator.RUNNER.run(options("open", ports, next).mode(LoadMode.OPEN).rate(perSecond)
        .connections(OPEN_CONNECTIONS).duration(duration).build(), ProgressListener.NONE));
  }

  private LoadOptions.Builder options(String name, List<Integer> ports, IntFunction<Request> next) {
    Judge judge = new Judge();
    return LoadOptions.builder().name(name).warmup(Duration.ZERO).requestTimeout(deadline.plus(slack))
        .targets(ports.stream().map(p -> URI.create("http://127.0.0.1:" + p)).toList())
        .source(judge.source(next)).check(judge);
  }

  /**
   * One run's judgement: remembers what each request's answer must contain, and keeps the reasons it reports few
   * (digits masked, {@value #REASONS} kinds per outcome, then {@code <status> (other)}).
   */
  private static final class Judge implements ResponseCheck {
    private final Map<Long, String> expected = new ConcurrentHashMap<>();
    private final Map<String, Set<String>> reasons = new ConcurrentHashMap<>();

    RequestSource source(IntFunction<Request> next) {
      return index -> {
        Request r = next.apply((int) index);
        if (r.expect() != null) {
          expected.put(index, r.expect());
        }
        return new HttpCall(r.path(), r.body(), r.headerLength() != null
            ? Map.of("content-type", "application/octet-stream", "Inference-Header-Content-Length", r.headerLength())
            : Map.of("content-type", "application/json"));
      };
    }

    @Override
    public Verdict check(long index, int status, MultiMap headers, Buffer answer) {
      String expect = expected.remove(index);
      String body = answer.toString();
      if (status == 200 && (expect == null || body.replace(" ", "").contains(expect))) {
        return Verdict.ok(OK);
      }
      if ((status == 503 && headers.contains("Retry-After") || status == 504) && body.contains("\"error\"")) {
        int at = body.indexOf("\"error\"");
        String why = body.substring(at + 7).replaceFirst("^\\s*:\\s*\"", "");
        why = why.substring(0, Math.min(120, why.length())).replaceAll("\"\\s*}?$", "");
        return Verdict.failed(CLEAN, bounded(CLEAN, status, why));
      }
      return Verdict.failed(LOST, bounded(LOST, status, body.substring(0, Math.min(200, body.length()))));
    }

    private String bounded(String key, int status, String why) {
      String reason = status + " " + why.replaceAll("[0-9]+", "N");
      Set<String> seen = reasons.computeIfAbsent(key, k -> ConcurrentHashMap.newKeySet());
      if (seen.contains(reason)) {
        return reason;
      }
      synchronized (seen) {
        if (seen.size() < REASONS) {
          seen.add(reason);
          return reason;
        }
      }
      return status + " (other)";
    }
  }

  private static Integer leadingStatus(String reason) {
    int space = reason.indexOf(' ');
    try {
      return Integer.parseInt(space < 0 ? reason : reason.substring(0, space));
    } catch (NumberFormatException e) {
      return null;
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
