package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.PrefixAffinity;
import io.kiln.pools.Tensor;
import io.kiln.pools.TextModels;
import io.kiln.pools.testing.TestWorker;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Streams spread over a pool's workers by their busy lanes, and follow their prompt prefix's worker. */
class StreamPlacementTest {

  private final WorkerSet workers = new WorkerSet();
  private final StreamPlacement placement = new StreamPlacement(workers);

  StreamPlacementTest() {
    for (String w : List.of("worker-0", "worker-1")) {
      for (int j = 0; j < 4; j++) {
        workers.add(new TestWorker(w + "#" + j));
      }
    }
  }

  private static long[] keys(String text) {
    return PrefixAffinity.keys(new InferenceRequest("", List.of(Tensor.ofBytes(TextModels.TEXT_INPUT, new long[] {1},
        List.of(text.getBytes(StandardCharsets.UTF_8)))), List.of(), Map.of()));
  }

  private String place(String text) {
    WorkerSlot lane = placement.choose(keys(text));
    workers.takeIdle(lane, List.of(), 0);
    return StreamPlacement.worker(lane.id());
  }

  @Test
  void streamsWithoutASharedPrefixAlternateBetweenWorkers() {
    assertThat(List.of(place("a".repeat(100)), place("b".repeat(100)), place("c".repeat(100)),
        place("d".repeat(100)))).containsExactlyInAnyOrder("worker-0", "worker-0", "worker-1", "worker-1");
  }

  @Test
  void aSharedPrefixStaysOnItsWorkerUntilThatWorkerIsClearlyBusier() {
    String system = "S".repeat(256);
    String first = place(system + " one");
    assertThat(place(system + " two")).isEqualTo(first);
    assertThat(place(system + " three")).as("2 busy against 0: within the slack").isEqualTo(first);
    String fourth = place(system + " four");
    assertThat(fourth).as("3 busy against 0: past the slack, the other worker takes it").isNotEqualTo(first);
    assertThat(place(system + " five")).as("the prefix now lives on the other worker too").isEqualTo(fourth);
  }
}
