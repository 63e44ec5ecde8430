package io.kiln.runtime.gpu;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Samples a node's GPUs with {@code nvidia-smi} at a bounded rate and keeps the latest {@link GpuSnapshot}:
 * {@code --query-gpu=}{@value GpuSnapshot#DEVICE_QUERY} for the devices, then
 * {@code --query-compute-apps=}{@value GpuSnapshot#PROCESS_QUERY} for the processes on them.
 *
 * <p><b>Rate:</b> a sample starts at most once per {@link Options#period()} (at least 1 s): {@link #start}
 * runs one at once and then one a period after the previous one started, on one daemon thread of its own;
 * {@link #sampleIfDue} refuses to run sooner whoever calls it. Nothing else runs the tool.
 *
 * <p><b>Threading:</b> {@link #latest}, {@link #failures} and {@link #firstSampleFrom} never block (gauges
 * call them on scrape threads); {@link #sampleIfDue} blocks for the tool, at most {@link Options#timeout()}
 * per query, so never call it on an event loop.
 *
 * <p><b>Errors:</b> a query that fails, hangs past its timeout (the tool is killed) or prints what does not
 * parse counts in {@link #failures} and leaves that query's part of the snapshot as it was: a failed devices
 * query publishes nothing (and skips the processes query); a failed processes query publishes the new devices
 * with the last good processes. Each query logs once when it starts failing and once when it recovers.
 */
public final class GpuSampler implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(GpuSampler.class);

  /** The two queries, for failure counts; {@link #tag} is what meters call them. */
  public enum Query {
    DEVICES("gpu"), PROCESSES("compute-apps");

    public final String tag;

    Query(String tag) {
      this.tag = tag;
    }
  }

  /**
   * How to sample.
   *
   * @param executable the {@code nvidia-smi} to run: a path, or a bare name looked up on {@code PATH} per sample
   * @param period the least time between the starts of two samples; at least {@link #MIN_PERIOD}
   * @param timeout how long one query may take before the tool is killed; at least 1 ms
   */
  public record Options(String executable, Duration period, Duration timeout) {

    public static final Duration DEFAULT_PERIOD = Duration.ofSeconds(10);
    public static final Duration MIN_PERIOD = Duration.ofSeconds(1);
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);

    /** @throws IllegalArgumentException naming the bad field */
    public Options {
      if (executable == null || executable.isBlank()) {
        throw new IllegalArgumentException("executable must name nvidia-smi, got '" + executable + "'");
      }
      if (period == null || period.compareTo(MIN_PERIOD) < 0) {
        throw new IllegalArgumentException("GPU sample period must be at least " + MIN_PERIOD.toSeconds() + " s, got "
            + period);
      }
      if (timeout == null || timeout.toMillis() < 1) {
        throw new IllegalArgumentException("timeout must be at least 1 ms, got " + timeout);
      }
    }

    /** {@code executable} with the default period and timeout. */
    public static Options of(String executable) {
      return new Options(executable, DEFAULT_PERIOD, DEFAULT_TIMEOUT);
    }

    public Options withPeriod(Duration p) {
      return new Options(executable, p, timeout);
    }

    public Options withTimeout(Duration t) {
      return new Options(executable, period, t);
    }
  }

  private record Waiter(long fromNanos, CompletableFuture<GpuSnapshot> future) {
  }

  private final Options options;
  private final LongSupplier nanoClock;
  private final AtomicLong[] failures = {new AtomicLong(), new AtomicLong()};
  private final boolean[] failing = new boolean[2]; // guarded by this
  private final List<Waiter> waiters = new ArrayList<>(); // guarded by itself
  // Replaced whole after each sample, so that a gauge read never sees half of one and never waits for one.
  private volatile GpuSnapshot latest = GpuSnapshot.NONE;
  private long lastStart; // guarded by this
  private boolean sampledOnce; // guarded by this
  private volatile boolean closed;
  // Apart from this, which a sample holds for up to two timeouts: close must not wait for one.
  private final Object lifecycle = new Object();
  private ScheduledExecutorService thread; // guarded by lifecycle

  /** A sampler on {@link System#nanoTime}. */
  public GpuSampler(Options options) {
    this(options, System::nanoTime);
  }

  /** @param nanoClock the clock the rate bound and {@link GpuSnapshot#sampledAtNanos} are measured on */
  public GpuSampler(Options options, LongSupplier nanoClock) {
    this.options = Objects.requireNonNull(options, "options");
    this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock");
  }

  public Options options() {
    return options;
  }

  /** Starts sampling on a daemon thread: a sample now, then one per period. Idempotent; never blocks. */
  public void start() {
    synchronized (lifecycle) {
      if (thread != null || closed) {
        return;
      }
      thread = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "kiln-gpu-sampler");
        t.setDaemon(true);
        return t;
      });
      thread.execute(this::tick);
    }
  }

  private void tick() {
    try {
      sampleIfDue();
    } catch (RuntimeException e) {
      LOG.warn("GPU sampling failed unexpectedly", e); // sampleIfDue handles the tool's own failures
    }
    long wait = Math.max(0, nextDueNanos() - nanoClock.getAsLong());
    try {
      synchronized (lifecycle) {
        if (!closed) {
          thread.schedule(this::tick, wait, TimeUnit.NANOSECONDS);
        }
      }
    } catch (RejectedExecutionException shuttingDown) {
      // closed meanwhile
    }
  }

  private synchronized long nextDueNanos() {
    return lastStart + options.period().toNanos();
  }

  /**
   * Runs one sample if none started within the last period (and the sampler is not closed); blocks for it.
   *
   * @return whether a sample ran (successful or not)
   */
  public synchronized boolean sampleIfDue() {
    long now = nanoClock.getAsLong();
    if (closed || sampledOnce && now - lastStart < options.period().toNanos()) {
      return false;
    }
    sampledOnce = true;
    lastStart = now;
    Optional<Path> tool = GpuDiscovery.locate(options.executable(), System.getenv("PATH"));
    GpuSnapshot previous = latest;
    List<GpuSnapshot.DeviceSample> devices;
    try {
      devices = GpuSnapshot.parseDevices(run(tool, "--query-gpu=" + GpuSnapshot.DEVICE_QUERY));
      succeeded(Query.DEVICES);
    } catch (GpuDiscoveryException e) {
      failed(Query.DEVICES, e, previous);
      return true;
    }
    List<GpuSnapshot.ProcessSample> processes = previous.processes();
    boolean processesKnown = previous.processesKnown();
    try {
      processes = GpuSnapshot.parseProcesses(run(tool, "--query-compute-apps=" + GpuSnapshot.PROCESS_QUERY));
      processesKnown = true;
      succeeded(Query.PROCESSES);
    } catch (GpuDiscoveryException e) {
      failed(Query.PROCESSES, e, previous);
    }
    publish(new GpuSnapshot(now, devices, processes, processesKnown));
    return true;
  }

  private String run(Optional<Path> tool, String query) {
    if (tool.isEmpty()) {
      throw new GpuDiscoveryException(options.executable() + " not found");
    }
    return SmiProcess.run(tool.get(), List.of(query, "--format=csv,noheader,nounits"), options.timeout(), "");
  }

  private void succeeded(Query q) {
    if (failing[q.ordinal()]) {
      failing[q.ordinal()] = false;
      LOG.info("GPU sampling: nvidia-smi {} answers again ({} failed samples so far)", q.tag,
          failures[q.ordinal()].get());
    }
  }

  private void failed(Query q, GpuDiscoveryException e, GpuSnapshot kept) {
    failures[q.ordinal()].incrementAndGet();
    if (!failing[q.ordinal()]) {
      failing[q.ordinal()] = true;
      LOG.warn("GPU sampling: nvidia-smi {} query failed, keeping the last good sample ({}); retrying every {} s"
          + " and logging again only when it answers: {}", q.tag, kept.sampled() ? "taken "
          + Duration.ofNanos(nanoClock.getAsLong() - kept.sampledAtNanos()).toMillis() + " ms ago" : "none yet",
          options.period().toSeconds(), e.getMessage());
    }
  }

  private void publish(GpuSnapshot s) {
    latest = s;
    List<Waiter> due = new ArrayList<>();
    synchronized (waiters) {
      waiters.removeIf(w -> w.fromNanos() <= s.sampledAtNanos() && due.add(w));
    }
    for (Waiter w : due) {
      w.future().complete(s);
    }
  }

  /** The latest good snapshot, {@link GpuSnapshot#NONE} before the first. */
  public GpuSnapshot latest() {
    return latest;
  }

  /** Failed samples of one query since this sampler was made. */
  public long failures(Query q) {
    return failures[q.ordinal()].get();
  }

  /** Now, on the clock snapshots are stamped with. */
  public long nanoTime() {
    return nanoClock.getAsLong();
  }

  /**
   * The first good snapshot whose sample started at or after {@code fromNanos} ({@link #nanoTime()}'s
   * clock): e.g. the first that sees a model loaded before then. Completes on the sampler's thread (do not
   * block there), or at once when the latest already qualifies; it never triggers a sample, so it may take a
   * period or more; cancelled when the sampler closes.
   */
  public CompletionStage<GpuSnapshot> firstSampleFrom(long fromNanos) {
    CompletableFuture<GpuSnapshot> f = new CompletableFuture<>();
    synchronized (waiters) {
      GpuSnapshot s = latest;
      if (s.sampled() && s.sampledAtNanos() >= fromNanos) {
        f.complete(s);
      } else if (closed) {
        f.cancel(false);
      } else {
        waiters.add(new Waiter(fromNanos, f));
      }
    }
    return f;
  }

  /** Stops sampling (a query in progress is killed); {@link #latest} keeps the last snapshot. Idempotent. */
  @Override
  public void close() {
    ScheduledExecutorService t;
    synchronized (lifecycle) {
      closed = true;
      t = thread;
    }
    if (t != null) {
      t.shutdownNow();
    }
    List<Waiter> left;
    synchronized (waiters) {
      left = new ArrayList<>(waiters);
      waiters.clear();
    }
    left.forEach(w -> w.future().cancel(false));
  }
}
