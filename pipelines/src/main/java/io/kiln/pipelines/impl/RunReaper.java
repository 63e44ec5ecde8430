package io.kiln.pipelines.impl;

import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.MembershipListener;
import io.kiln.runtime.SharedStore;
import io.kiln.pipelines.CacheIndex;
import io.kiln.pipelines.PipelineEvent;
import io.kiln.pipelines.RunState;
import io.kiln.pipelines.RunStatus;
import io.kiln.pipelines.StepState;
import io.kiln.pipelines.StepStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leader duties for pipelines: a run whose coordinating node left the cluster is marked FAILED (nobody else
 * would ever finish it), index entries of a node that left are dropped, and finished runs older than the
 * retention are forgotten. Only the leader acts, and it changes a run only by compare-and-set, so a
 * concurrent write is never overwritten. Runs on membership notifications and a periodic timer; never
 * blocks.
 */
public final class RunReaper implements MembershipListener {

  private static final Logger LOG = LoggerFactory.getLogger(RunReaper.class);
  private static final long PERIOD_MS = 30_000;

  private final KilnRuntime runtime;
  private final RunStore store;
  private final CacheIndex index;
  private final EventSink events;
  private final LongSupplier clockMillis;
  private final Duration retention;
  private volatile boolean closed;
  private long timer = -1;

  public RunReaper(KilnRuntime runtime, RunStore store, CacheIndex index, EventSink events, LongSupplier clockMillis,
                   Duration retention) {
    this.runtime = runtime;
    this.store = store;
    this.index = index;
    this.events = events;
    this.clockMillis = clockMillis;
    this.retention = retention;
  }

  public void start() {
    runtime.addMembershipListener(this);
    timer = runtime.vertx().setPeriodic(PERIOD_MS, id -> {
      if (!closed && runtime.isLeader()) {
        sweep();
      }
    });
    if (runtime.isLeader()) {
      failOrphans();
    }
  }

  @Override
  public void memberLeft(String memberId) {
    if (!closed && runtime.isLeader()) {
      failOrphans();
      index.forgetNode(memberId);
    }
  }

  @Override
  public void leaderChanged(boolean isLeader) {
    if (!closed && isLeader) {
      failOrphans();
    }
  }

  /** Fails every unfinished run whose coordinator is not a member. */
  public void failOrphans() {
    List<String> members = runtime.members();
    store.runEntries().thenAccept(entries -> {
      for (Map.Entry<String, SharedStore.Entry<RunStatus>> e : entries.entrySet()) {
        RunStatus s = e.getValue().value();
        if (!s.state().terminal() && !members.contains(s.coordinator())) {
          fail(e.getKey(), e.getValue(), s, "node " + s.coordinator() + ", which coordinated the run, left the cluster");
        }
      }
    }).whenComplete((v, err) -> {
      if (err != null) {
        LOG.debug("scanning pipeline runs failed", err);
      }
    });
  }

  /**
   * After a partition healed: fails every unfinished run recorded as coordinated by this node that this node does not
   * coordinate (it ended them while on the smaller side, where their last records were refused, and the larger side's
   * leader may not have seen this node leave). Any node does this for its own runs; by compare-and-set.
   */
  public void failOwnUnheld(java.util.function.Predicate<String> coordinatedHere) {
    String me = runtime.nodeId();
    store.runEntries().thenAccept(entries -> {
      for (Map.Entry<String, SharedStore.Entry<RunStatus>> e : entries.entrySet()) {
        RunStatus s = e.getValue().value();
        if (!s.state().terminal() && s.coordinator().equals(me) && !coordinatedHere.test(e.getKey())) {
          fail(e.getKey(), e.getValue(), s, "node " + me + ", which coordinated the run, was on the smaller side of a"
              + " partition and ended it there");
        }
      }
    }).whenComplete((v, err) -> {
      if (err != null) {
        LOG.debug("scanning this node's pipeline runs failed", err);
      }
    });
  }

  private void fail(String runId, SharedStore.Entry<RunStatus> current, RunStatus s, String cause) {
    long now = clockMillis.getAsLong();
    String at = s.steps().stream().filter(st -> st.state() == StepState.WAITING || st.state() == StepState.RUNNING)
        .map(st -> " (step '" + st.name() + "' was " + st.state().name().toLowerCase(java.util.Locale.ROOT)
            + (st.nodeId().isEmpty() ? "" : " on node " + st.nodeId()) + ")").findFirst().orElse("");
    String why = cause + at + "; the run's outcome is unknown, start it again";
    List<StepStatus> steps = new ArrayList<>();
    for (StepStatus st : s.steps()) {
      boolean open = st.state() == StepState.PENDING || st.state() == StepState.WAITING
          || st.state() == StepState.RUNNING;
      steps.add(!open ? st : new StepStatus(st.name(), st.kind(), st.state() == StepState.PENDING ? StepState.SKIPPED
          : StepState.FAILED, st.nodeId(), st.attempts(), st.queuedAtMs(), st.startedAtMs(), now,
          st.state() == StepState.PENDING ? "" : why, Map.of()));
    }
    long seq = s.events().isEmpty() ? 1 : s.events().get(s.events().size() - 1).seq() + 1;
    PipelineEvent event = new PipelineEvent(runId, s.pipeline(), seq, "run_failed", "", s.coordinator(), 0, now, why);
    List<PipelineEvent> evs = new ArrayList<>(s.events());
    evs.add(event);
    while (evs.size() > RunStatus.MAX_EVENTS) {
      evs.remove(0);
    }
    store.replace(runId, current, s.ended(RunState.FAILED, why, now, steps, evs)).thenAccept(replaced -> {
      if (replaced) {
        LOG.info("pipeline run {} failed: {}", runId, why);
        events.publish(event);
      }
    });
  }

  /** Fails orphans and forgets finished runs past the retention. */
  public void sweep() {
    failOrphans();
    long cutoff = clockMillis.getAsLong() - retention.toMillis();
    store.runEntries().thenAccept(entries -> entries.forEach((id, entry) -> {
      RunStatus s = entry.value();
      if (s.state().terminal() && s.endedAtMs() < cutoff) {
        store.remove(id, entry);
      }
    }));
  }

  public void close() {
    closed = true;
    if (timer >= 0) {
      runtime.vertx().cancelTimer(timer);
    }
  }
}
