package io.kiln.runtime.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.scheduling.Placement;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A waiting placement is retried when things change, but a storm of changes costs a bounded number of tries. */
class PlacerTest {

  private final Vertx vertx = Vertx.vertx();

  @AfterEach
  void close() {
    vertx.close().toCompletionStage().toCompletableFuture().join();
  }

  @Test
  void aStormOfChangesRetriesAWaitingRequestABoundedNumberOfTimes() {
    AtomicInteger tries = new AtomicInteger();
    AtomicBoolean room = new AtomicBoolean();
    long start = System.nanoTime(); // from before the first pass: the periodic retry runs from then on
    Placer placer = new Placer(vertx.getOrCreateContext(), request -> {
      tries.incrementAndGet();
      return room.get() ? new Placement.Ranked(List.of("n1")) : new Placement.Pending("no room yet");
    });
    CompletionStage<String> placed = placer.place(Resources.cpu(1), SchedulingStrategy.DEFAULT, Duration.ofSeconds(30),
        "test", node -> CompletableFuture.completedFuture(node));
    await().until(() -> tries.get() == 1);

    for (int i = 0; i < 100_000; i++) {
      placer.resourcesChanged(); // as 100,000 rows arriving from other nodes
    }
    await().until(() -> tries.get() > 1);
    int tried = tries.get(); // read before the time it is held to, so a pass after the reading cannot count
    long elapsedMs = (System.nanoTime() - start) / 1_000_000;
    // One pass at once, then at most one per interval since (the storm's kicks and the 250 ms periodic retry).
    assertThat(tried).isLessThanOrEqualTo(3 + (int) (elapsedMs / Placer.KICK_INTERVAL_MS) + (int) (elapsedMs / 250));

    room.set(true);
    placer.resourcesChanged();
    assertThat(placed.toCompletableFuture()).succeedsWithin(Duration.ofSeconds(5)).isEqualTo("n1");
  }
}
