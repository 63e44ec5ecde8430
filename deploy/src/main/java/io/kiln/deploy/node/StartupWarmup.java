package io.kiln.deploy.node;

import io.kiln.gateway.ReadinessHold;
import io.kiln.gateway.TlsFiles;
import io.kiln.runtime.KilnRuntime;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * A node's start-up warm-up, from the readiness hold to its {@link WarmupReport} (see {@link ServingNode}'s class
 * comment): holds the gateway not ready from before it binds, runs {@link NodeWarmup} and then, when the options name
 * the user's deployments, {@link ModelsWarmup} (the internal traffic is cut short once their pools here are loaded),
 * bounds the whole by a last-resort deadline, and releases the hold when it is over, whatever happened.
 *
 * <p>Threading: no method blocks. {@link #begin} or {@link #skip} is called once, by the node's start;
 * {@link #stop} may be called from any thread at any time after.
 */
final class StartupWarmup {

  // The node's logger: these lines have always been the node's, and log readers filter on its name.
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(ServingNode.class);

  private final NodeAssembly node;
  private final WarmupOptions options;
  private final ReadinessHold hold; // null when the warm-up is off
  private final CompletableFuture<WarmupReport> warmedUp = new CompletableFuture<>();
  private volatile NodeWarmup warming; // from the warm-up's start until close
  private volatile ModelsWarmup userWarming; // likewise, where the warm-up warms the user's deployments

  /**
   * Takes the readiness hold when {@code options} are enabled. Call it before the gateway binds, so that no probe
   * ever sees the node ready before it is warm.
   */
  StartupWarmup(NodeAssembly node, WarmupOptions options) {
    this.node = node;
    this.options = options;
    this.hold = options.enabled() ? node.gateway().holdReadiness("warming up the serving path") : null;
  }

  /** Completes once the warm-up is over and the node ready (with {@link WarmupReport#off()} without one); never fails. */
  CompletionStage<WarmupReport> report() {
    return warmedUp;
  }

  /**
   * Starts the warm-up, if any, through the gateway's bound ports: the internal model's, then the user's deployments',
   * and releases the readiness hold when it is over.
   *
   * @param bindHost the gateway's bind address; the traffic goes to it, or to loopback for a wildcard bind
   */
  void begin(String bindHost, TlsFiles tls) {
    if (hold == null) {
      warmedUp.complete(WarmupReport.off());
      return;
    }
    KilnRuntime runtime = node.runtime();
    WarmupTraffic.Ports ports = new WarmupTraffic.Ports(loopback(bindHost), node.gateway().httpPort(),
        node.gateway().grpcPort(), tls);
    NodeWarmup w = new NodeWarmup(runtime, node.pools(), node.board(), node.models(), node.registry(), options, ports,
        System::nanoTime);
    ModelsWarmup m = options.deployments().isEmpty() ? null : new ModelsWarmup(runtime.vertx(), runtime.nodeId(),
        node.serve(), node.board(), node.registry(), options, ports, System::nanoTime);
    warming = w;
    userWarming = m;
    // Last resort: whatever the warm-up waits on, the node goes ready at the latest this long after it began.
    long limitMs = options.duration().plus(NodeWarmup.SETUP_TIMEOUT.multipliedBy(3)).plus(ModelsWarmup.bound(options))
        .toMillis();
    long deadline = runtime.vertx().setTimer(limitMs, id -> {
      if (!warmedUp.isDone()) {
        log.warn("node {}: the start-up warm-up did not end within {} ms; reporting ready anyway", runtime.nodeId(),
            limitMs);
        w.stop();
        if (m != null) {
          m.stop();
        }
        hold.release();
        warmedUp.complete(new WarmupReport(true, w.model(), Map.of(), Map.of(), Duration.ofMillis(limitMs), false,
            "warm-up did not end within " + limitMs + " ms"));
      }
    });
    if (m != null) {
      m.loaded().thenRun(w::cutShort);
    }
    long started = System.nanoTime();
    w.run()
        .handle((report, err) -> report != null ? report
            : new WarmupReport(true, w.model(), Map.of(), Map.of(), Duration.ZERO, false, "warm-up failed: " + err))
        .thenCompose(report -> m == null ? CompletableFuture.completedFuture(report)
            : m.run().handle((r, err) -> withModels(report, r, err, Duration.ofNanos(System.nanoTime() - started))))
        .whenComplete((report, err) -> {
          runtime.vertx().cancelTimer(deadline);
          hold.release();
          warmedUp.complete(report != null ? report
              : new WarmupReport(true, w.model(), Map.of(), Map.of(), Duration.ZERO, false, "warm-up failed: " + err));
          if (report != null && !report.models().isEmpty()) {
            log.info("node {} warmed up its deployments: {}", runtime.nodeId(), report.describe());
          }
        });
  }

  /** The node did not start: releases the hold and reports no warm-up (a report already given stands). */
  void skip() {
    if (hold != null) {
      hold.release();
    }
    warmedUp.complete(WarmupReport.off());
  }

  /**
   * Ends a warm-up still running; completes once it is over and torn down (its pool removed), at once without one.
   * Fails only if tearing it down threw.
   */
  CompletionStage<Void> stop() {
    NodeWarmup w = warming;
    ModelsWarmup m = userWarming;
    if (w != null) {
      w.stop(); // its traffic ends; its pool is torn down before the gateway goes
    }
    if (m != null) {
      m.stop();
    }
    return warmedUp.handle((r, e) -> null)
        .thenRun(() -> {
          if (w != null) {
            w.close();
          }
          if (m != null) {
            m.close();
          }
        });
  }

  /** The internal warm-up's report with the user models' part added. */
  private static WarmupReport withModels(WarmupReport internal, ModelsWarmup.Result r, Throwable err, Duration took) {
    if (r == null) {
      return new WarmupReport(true, internal.model(), internal.answered(), internal.failed(), took, false,
          join(internal.problem(), "user model warm-up failed: " + err), List.of());
    }
    Map<WarmupReport.Protocol, Long> answered = new EnumMap<>(WarmupReport.Protocol.class);
    Map<WarmupReport.Protocol, Long> failed = new EnumMap<>(WarmupReport.Protocol.class);
    for (WarmupReport.Protocol p : WarmupReport.Protocol.values()) {
      answered.put(p, internal.answered(p) + r.answered().get(p));
      failed.put(p, internal.failed().get(p) + r.failed().get(p));
    }
    boolean traffic = r.models().stream().anyMatch(x -> x.answered() + x.failed() > 0);
    return new WarmupReport(true, internal.model(), answered, failed, took, traffic ? r.settled() : internal.settled(),
        join(internal.problem(), r.problem()), r.models());
  }

  private static String join(String a, String b) {
    return a == null ? b : b == null ? a : a + "; " + b;
  }

  /** Where this node reaches its own gateway: the bound interface, or loopback for a wildcard bind. */
  private static String loopback(String bindHost) {
    return switch (bindHost) {
      case "0.0.0.0" -> "127.0.0.1";
      case "::", "[::]", "::0" -> "::1";
      default -> bindHost;
    };
  }
}
