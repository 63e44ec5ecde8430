package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.testing.ManualClock;
import io.kiln.pools.testing.Requests;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class DeadlineSweepTest {

  private final ManualClock clock = new ManualClock();
  private final List<String> expired = new ArrayList<>();
  private int sweeps;
  private final DeadlineSweep sweep = new DeadlineSweep(clock, clock, p -> {
    expired.add(p.request.id());
    p.state = PendingRequest.State.DONE;
  }, () -> sweeps++);

  private PendingRequest watch(String id, long timeoutMillis) {
    InferenceRequest r = Requests.request(id, 1);
    PendingRequest p = new PendingRequest(r, BatchKey.of(r), clock.getAsLong() + timeoutMillis * 1_000_000, clock.getAsLong());
    sweep.watch(p, clock.getAsLong());
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
    assertThat(sweep.live()).isZero();
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
  void settledRequestsNeverExpireAndTheLastOneCancelsTheTimer() {
    PendingRequest a = watch("a", 10);
    PendingRequest b = watch("b", 20);
    sweep.unwatch(a);
    sweep.unwatch(a); // idempotent
    clock.advanceMillis(10);
    assertThat(expired).isEmpty();
    sweep.unwatch(b);
    assertThat(clock.pendingTimers()).as("nothing watched, no timer").isZero();
    clock.advanceMillis(100);
    assertThat(expired).isEmpty();
    assertThat(sweeps).isZero();
  }

  @Test
  void whatItRetainsStaysBoundedByTheLiveRequests() {
    watch("kept", 60_000);
    for (int i = 0; i < 10_000; i++) {
      sweep.unwatch(watch("r" + i, 30_000));
    }
    assertThat(sweep.live()).isEqualTo(1);
    assertThat(sweep.retained()).isLessThanOrEqualTo(2 * 1 + 64 + 1);
    clock.advanceMillis(60_000);
    assertThat(expired).containsExactly("kept");
  }

  @Test
  void clearForgetsEverythingAndStopsTheTimer() {
    PendingRequest a = watch("a", 10);
    sweep.clear();
    assertThat(a.watched).isFalse();
    assertThat(clock.pendingTimers()).isZero();
    clock.advanceMillis(20);
    assertThat(expired).isEmpty();
  }
}
