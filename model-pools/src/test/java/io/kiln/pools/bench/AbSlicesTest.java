package io.kiln.pools.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.kiln.pools.bench.AbSlices.Kind;
import io.kiln.pools.bench.AbSlices.Round;
import io.kiln.pools.bench.AbSlices.Slice;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** The A/B slicing of PoolBenchmark, with simulated slices: no model, no pool, no clock. */
class AbSlicesTest {

  private static final Slice D8 = new Slice(Kind.DIRECT, 8);
  private static final Slice P8 = new Slice(Kind.POOL, 8);
  private static final Slice D16 = new Slice(Kind.DIRECT, 16);
  private static final Slice P16 = new Slice(Kind.POOL, 16);
  private static final Slice P1 = new Slice(Kind.POOL, 1);

  @Test
  void slicesAlternateDirectAndPoolAndEveryEvenRoundRunsThemBackwards() {
    assertThat(AbSlices.order(1, List.of(8, 16), true)).containsExactly(D8, P8, D16, P16, P1);
    assertThat(AbSlices.order(2, List.of(8, 16), true)).containsExactly(P1, P16, D16, P8, D8);
    assertThat(AbSlices.order(3, List.of(16), false)).containsExactly(D16, P16);
    assertThatThrownBy(() -> AbSlices.order(1, List.of(1, 8), false)).hasMessageContaining(">= 2");
  }

  @Test
  void aRoundComparesTheBestBatchedPoolSliceWithTheBestBatchedDirectSlice() {
    // The unbatched pool slice is the fastest pool here, but it is not batching: it does not count.
    Round r = AbSlices.judge(4, List.of(D8, P8, D16, P16, P1), List.of(100.0, 95.0, 150.0, 120.0, 200.0));

    assertThat(r.direct()).isEqualTo(D16);
    assertThat(r.pool()).isEqualTo(P16);
    assertThat(r.ratio()).isCloseTo(0.8, within(1e-9));
    assertThat(AbSlices.line(r)).isEqualTo("A/B round 4: direct 150.0 images/s (batch 16), pool 120.0 images/s "
        + "(max_batch_size 16), ratio 0.800");
    assertThatThrownBy(() -> AbSlices.judge(1, List.of(D8, P1), List.of(1.0, 2.0)))
        .hasMessageContaining("batched pool slice");
  }

  @Test
  void theSummaryIsTheMedianMeanAndSpreadOfThePerRoundRatios() {
    List<Round> rounds = new ArrayList<>();
    double[] ratios = {0.9, 0.8, 1.0, 0.95};
    for (int i = 0; i < ratios.length; i++) {
      rounds.add(new Round(i + 1, D16, 100, P16, 100 * ratios[i]));
    }

    AbSlices.Summary s = AbSlices.summarize(rounds);

    assertThat(s.rounds()).isEqualTo(4);
    assertThat(s.median()).isCloseTo(0.925, within(1e-9));
    assertThat(s.mean()).isCloseTo(0.9125, within(1e-9));
    assertThat(s.min()).isCloseTo(0.8, within(1e-9));
    assertThat(s.max()).isCloseTo(1.0, within(1e-9));
    assertThat(s.sd()).isCloseTo(0.0854, within(1e-4));
    assertThat(s.toString()).isEqualTo("A/B over 4 rounds: pool/direct median 0.925, mean 0.913, min 0.800, max 1.000, "
        + "sd 0.085");
  }

  @Test
  void aMachineSlowingDownSteadilyDoesNotMoveTheRatio() {
    // The pool delivers 92 % of direct at every batch size; the machine loses 2 % of its speed per slice (a
    // build starting beside the benchmark). Run back to back (all direct, then all pool), the ratio would read
    // ~0.80; interleaved, each round is within 3 points and two rounds average to 0.92.
    Map<Slice, Double> atFullSpeed = Map.of(D8, 100.0, D16, 150.0, P8, 92.0, P16, 138.0, P1, 40.0);
    int[] t = {0};
    List<Slice> ran = new ArrayList<>();
    Function<Slice, Double> measure = s -> {
      ran.add(s);
      return atFullSpeed.get(s) * (1 - 0.02 * t[0]++);
    };
    List<Integer> seen = new ArrayList<>();

    List<Round> rounds = AbSlices.run(4, List.of(8, 16), true, measure, Double::doubleValue, (r, results) -> {
      seen.add(r.round());
      assertThat(results).hasSize(5);
    });

    assertThat(seen).containsExactly(1, 2, 3, 4);
    assertThat(ran).hasSize(20).startsWith(D8, P8, D16, P16, P1, P1, P16, D16, P8, D8);
    assertThat(rounds).allSatisfy(r -> assertThat(r.ratio()).isCloseTo(0.92, within(0.03)));
    assertThat((rounds.get(0).ratio() + rounds.get(1).ratio()) / 2).isCloseTo(0.92, within(0.002));
    assertThat(AbSlices.summarize(rounds).mean()).isCloseTo(0.92, within(0.005));
  }
}
