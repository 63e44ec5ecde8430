package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class MaxThroughputSearchTest {

  @Test
  void convergesOnTheCapacityOfAServerWithKnownCapacity() {
    // 10 slots x 50 ms: at most 200 requests/s; beyond that its queue, and so p99, grows without bound. The
    // target (5x the service time) leaves room for a loaded machine's noise below capacity, while 25 %
    // overload queues for ~300 ms within a step.
    List<MaxThroughputSearch.Step> seen = new ArrayList<>();
    MaxThroughputSearch.Result result;
    try (TestServer server = TestServer.limitedConcurrency(10, 50); LoadRunner runner = LoadRunner.create(1)) {
      LoadOptions base = LoadOptions.builder().name("capacity").target("http://127.0.0.1:" + server.port)
          .connections(32).warmup(Duration.ofMillis(300)).duration(Duration.ofSeconds(1)).build();
      result = new MaxThroughputSearch(runner).search(base,
          new MaxThroughputSearch.Options(250, 0.001, 50, 10_000, 8, 0.15), ProgressListener.NONE, step -> {
            seen.add(step);
            System.out.println("step " + step.step() + " " + step.rate() + " " + step.passed() + " " + step.reason());
          });
    }

    assertThat(result.steps()).isEqualTo(seen).hasSizeBetween(4, 8);
    assertThat(result.bestRate()).isBetween(100.0, 300.0);
    assertThat(result.best()).isNotNull();
    assertThat(result.best().latencyMs().p99()).isLessThanOrEqualTo(250);
    // Doubling comes first: rates rise until the first failure.
    assertThat(result.steps().get(0).rate()).isEqualTo(50);
    assertThat(result.steps().get(1).rate()).isEqualTo(100);
    assertThat(result.steps()).anyMatch(s -> !s.passed() && s.rate() <= 500);
    assertThat(result.steps()).filteredOn(s -> s.rate() >= 400).allMatch(s -> !s.passed());
  }

  @Test
  void verdictNamesEveryReason() {
    RunResult r = new RunResult("x", java.util.Map.of(), "", "intended", 1, 100, 90, 10, 100, 90, 100.0,
        new RunResult.Latency(100, 1, 5, 5, 8, 70, 80, 90), java.util.Map.of("http:200", 90L, "http:503", 10L),
        List.of(), List.of(), null, null);
    String why = MaxThroughputSearch.verdict(r, MaxThroughputSearch.Options.of(50));
    assertThat(why).contains("p99 70.000 ms > 50.000 ms").contains("errors 10.000%");
    assertThat(MaxThroughputSearch.verdict(r, new MaxThroughputSearch.Options(80, 0.2, 1, 1, 1, 0.1))).isEmpty();
  }
}
