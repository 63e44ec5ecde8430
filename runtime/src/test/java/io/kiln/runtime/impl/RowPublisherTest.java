package io.kiln.runtime.impl;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The node row's write rate is bounded and the last state always lands, on a simulated clock. */
class RowPublisherTest {

  private final SimulatedTime time = new SimulatedTime();
  private final List<NodeRecord> written = new ArrayList<>();
  private final List<CompletableFuture<Void>> pendingWrites = new ArrayList<>();
  private boolean slowWrites;
  private long available = 8;
  private long version;
  private RowPublisher publisher;

  @BeforeEach
  void publisher() {
    publisher = new RowPublisher(100, time::nanos, time::after, this::row, this::write);
  }

  private NodeRecord row() {
    return new NodeRecord("a", "127.0.0.1", Map.of("CPU", 8L), Map.of("CPU", available), Map.of(), Map.of(), 0,
        ++version);
  }

  private CompletionStage<Void> write(NodeRecord rec) {
    written.add(rec);
    CompletableFuture<Void> done = new CompletableFuture<>();
    if (slowWrites) {
      pendingWrites.add(done);
    } else {
      done.complete(null);
    }
    return done;
  }

  @Test
  void aChangeAfterAQuietIntervalIsWrittenAtOnce() {
    publisher.changed();
    assertThat(written).hasSize(1);

    time.advanceMillis(150);
    available = 7;
    publisher.changed();
    assertThat(written).hasSize(2);
    assertThat(written.get(1).available()).containsEntry("CPU", 7L);
  }

  @Test
  void aBurstIsOneWriteNowAndOneWithTheLatestStateAtTheEndOfTheInterval() {
    for (int i = 0; i < 1_000; i++) {
      available = i % 8;
      publisher.changed();
      time.advanceMillis(0.05); // 1,000 changes in 50 ms
    }
    assertThat(written).hasSize(1);

    time.advanceMillis(60);
    assertThat(written).hasSize(2);
    assertThat(written.get(1).available()).containsEntry("CPU", 999L % 8);
    time.advanceMillis(1_000);
    assertThat(written).hasSize(2);
  }

  @Test
  void atMostOneWritePerIntervalUnderSustainedChange() {
    for (int ms = 0; ms < 10_000; ms++) {
      available = ms % 7;
      publisher.changed();
      time.advanceMillis(1);
    }
    // 10 s of a change every millisecond: one write per 100 ms.
    assertThat(written).hasSizeBetween(100, 101);
    for (int i = 1; i < written.size(); i++) {
      assertThat(written.get(i).version()).isGreaterThan(written.get(i - 1).version());
    }
  }

  @Test
  void aRowBackToWhatWasWrittenIsNotWrittenAgain() {
    publisher.changed();
    available = 7;
    publisher.changed(); // a task reserved ...
    available = 8;
    publisher.changed(); // ... and released within the interval
    time.advanceMillis(200);

    assertThat(written).hasSize(1);
  }

  @Test
  void oneWriteInFlightAtATimeAndTheLastStateLandsAfterASlowOne() {
    slowWrites = true;
    publisher.changed();
    time.advanceMillis(500);
    available = 3;
    publisher.changed();
    assertThat(written).hasSize(1); // the first has not completed

    pendingWrites.get(0).complete(null);
    assertThat(written).hasSize(2);
    assertThat(written.get(1).available()).containsEntry("CPU", 3L);
  }

  @Test
  void closeDropsWhatIsPendingAndCompletesWhenTheWriteInFlightHas() {
    slowWrites = true;
    publisher.changed();
    available = 2;
    publisher.changed();
    CompletableFuture<Void> closed = publisher.close().toCompletableFuture();
    assertThat(closed).isNotDone();

    pendingWrites.get(0).complete(null);
    time.advanceMillis(1_000);
    publisher.changed();

    assertThat(closed).isDone();
    assertThat(written).hasSize(1);
  }

  /** A clock and timers that move only when told. Not thread-safe. */
  static final class SimulatedTime {
    private long nanos;
    private final List<long[]> dueAt = new ArrayList<>();
    private final List<Runnable> tasks = new ArrayList<>();

    long nanos() {
      return nanos;
    }

    void after(long delayMillis, Runnable task) {
      dueAt.add(new long[] {nanos + delayMillis * 1_000_000});
      tasks.add(task);
    }

    void advanceMillis(double millis) {
      long end = nanos + (long) (millis * 1_000_000);
      while (true) {
        int next = -1;
        for (int i = 0; i < dueAt.size(); i++) {
          if (dueAt.get(i)[0] <= end && (next < 0 || dueAt.get(i)[0] < dueAt.get(next)[0])) {
            next = i;
          }
        }
        if (next < 0) {
          break;
        }
        nanos = Math.max(nanos, dueAt.remove(next)[0]);
        tasks.remove(next).run();
      }
      nanos = end;
    }
  }
}
