package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.testing.ManualClock;
import io.kiln.pools.testing.Requests;
import io.kiln.runtime.time.Deadlines;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A dispatcher's requests' deadlines on the runtime's confined {@link Deadlines}, on a manual clock. */
class DeadlineSweepTest {

  private final ManualClock clock = new ManualClock();
  private final List<String> expired = new ArrayList<>();
  private int sweeps;
  private final Deadlines sweep = Deadlines.confined(clock, clock, () -> sweeps++);

  private PendingRequest watch(String id, long timeoutMillis) {
    InferenceRequest r = Requests.request(id, 1);
    PendingRequest p = new PendingRequest(r, BatchKey.of(r),
        io.kiln.pools.RequestContext.of(id, clock.getAsLong() + timeoutMillis * 1_000_000), clock.getAsLong());
    p.onExpired = e -> {
      expired.add(e.request.id());
      e.state = PendingRequest.State.DONE;
    };
    sweep.add(p, p.deadlineNanos());
    return p;
  }

  @Test
  void manyRequestsShareOneTimerAndExpireAtTheirOwnDeadlines() {
    watch("a", 10);
    clock.advanceMillis(2);
    watch("b", 10);
    watch("c", 10);
    assertThat(clock.pendingTimers()).as("one timer for all of them").isEqualTo(1);
    clock.advanceNanos(8_000_000 - 1);
    assertThat(expired).isEmpty();
    clock.advanceNanos(1);
    assertThat(expired).containsExactly("a");
    assertThat(clock.pendingTimers()).as("re-armed for b and c").isEqualTo(1);
    clock.advanceMillis(2);
    assertThat(expired).containsExactly("a", "b", "c");
    assertThat(sweeps).isEqualTo(2);
    assertThat(clock.pendingTimers()).isZero();
    assertThat(sweep.listed()).isZero();
  }

  @Test
  void anEarlierDeadlineMovesTheTimerForward() {
    watch("long", 1_000);
    watch("short", 5);
    clock.advanceMillis(5);
    assertThat(expired).containsExactly("short");
    assertThat(clock.pendingTimers()).isEqualTo(1);
    clock.advanceMillis(995);
    assertThat(expired).containsExactly("short", "long");
  }

  @Test
  void settledRequestsNeverExpireAndAnIdleTimerStopsAfterOneMoreFiring() {
    PendingRequest a = watch("a", 10);
    PendingRequest b = watch("b", 20);
    assertThat(a.remove()).isTrue();
    assertThat(a.remove()).as("idempotent").isFalse();
    clock.advanceMillis(10);
    assertThat(expired).isEmpty();
    b.remove();
    assertThat(clock.pendingTimers()).as("the last one out leaves it armed, for the next request").isOne();
    clock.advanceMillis(100);
    assertThat(clock.pendingTimers()).as("it fired, found nothing due and stopped").isZero();
    assertThat(expired).isEmpty();
    assertThat(sweeps).isZero();
  }

  @Test
  void whatItRetainsIsTheLiveRequests() {
    watch("kept", 60_000);
    for (int i = 0; i < 10_000; i++) {
      watch("r" + i, 30_000).remove(); // settled in time: unlinked at once
    }
    assertThat(sweep.listed()).isEqualTo(1);
    clock.advanceMillis(60_000);
    assertThat(expired).containsExactly("kept");
  }

  @Test
  void clearForgetsEverythingAndStopsTheTimer() {
    PendingRequest a = watch("a", 10);
    sweep.clear();
    assertThat(a.watched()).isFalse();
    assertThat(clock.pendingTimers()).isZero();
    clock.advanceMillis(20);
    assertThat(expired).isEmpty();
  }
}
