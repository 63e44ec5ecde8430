package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.loadtest.impl.RoundVerdict;
import io.kiln.loadtest.impl.RoundVerdict.Direction;
import io.kiln.loadtest.impl.RoundVerdict.Judgement;
import io.kiln.loadtest.impl.RoundVerdict.Round;
import io.kiln.loadtest.impl.RoundVerdict.Status;
import io.kiln.loadtest.impl.RoundVerdict.Target;
import io.kiln.loadtest.impl.RoundVerdict.Unit;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The verdict rules of RESULTS.md: at least three interleaved rounds, median and range, met / unstable / missed. */
class RoundVerdictTest {

  private static final Target SEVENTY = new Target(Direction.AT_LEAST, 0.7, Unit.PERCENT);
  private static final Target P99 = new Target(Direction.AT_MOST, 2.0, Unit.MS);

  private static List<Round> rounds(double... values) {
    List<Round> out = new ArrayList<>();
    for (int i = 0; i < values.length; i++) {
      out.add(Round.of("r" + (i + 1), values[i]));
    }
    return out;
  }

  @Test
  void everyRoundMeetingTheTargetIsMetWithMedianAndRange() {
    Judgement j = RoundVerdict.judge(rounds(0.75, 0.71, 0.73), SEVENTY, true, null);

    assertThat(j.status()).isEqualTo(Status.MET);
    assertThat(j.median()).isEqualTo(0.73);
    assertThat(j.min()).isEqualTo(0.71);
    assertThat(j.max()).isEqualTo(0.75);
    assertThat(j.measured()).isEqualTo("median 73 % (71–75 %, 3 rounds)");
    assertThat(j.verdict()).isEqualTo("met");
    assertThat(j.markdown()).isEqualTo("met");
  }

  @Test
  void noRoundMeetingItIsMissedByTheMediansDistance() {
    Judgement j = RoundVerdict.judge(rounds(0.64, 0.60, 0.66), SEVENTY, true, null);

    assertThat(j.status()).isEqualTo(Status.MISSED);
    assertThat(j.verdict()).isEqualTo("missed by 6 points (median)");
    assertThat(j.markdown()).isEqualTo("**MISSED** by 6 points (median)");
  }

  @Test
  void aRangeThatStraddlesTheTargetIsUnstableWhateverTheMedianSays() {
    Judgement medianMeets = RoundVerdict.judge(rounds(0.75, 0.69, 0.72), SEVENTY, true, null);
    Judgement medianMisses = RoundVerdict.judge(rounds(0.64, 0.71, 0.66), SEVENTY, true, null);

    assertThat(medianMeets.status()).isEqualTo(Status.UNSTABLE);
    assertThat(medianMeets.verdict()).isEqualTo("unstable: the range 69–75 % straddles ≥ 70 % (median meets it)");
    assertThat(medianMisses.status()).isEqualTo(Status.UNSTABLE);
    assertThat(medianMisses.verdict()).contains("(median misses it)");
    assertThat(medianMisses.markdown()).startsWith("**UNSTABLE**: the range 64–71 %");
  }

  @Test
  void fewerThanThreeRoundsIsNoVerdictEvenWhenEveryRoundMeetsIt() {
    Judgement one = RoundVerdict.judge(rounds(0.95), SEVENTY, true, null);
    Judgement two = RoundVerdict.judge(rounds(0.95, 0.90), SEVENTY, true, null);

    assertThat(one.status()).isEqualTo(Status.INSUFFICIENT_ROUNDS);
    assertThat(one.verdict()).isEqualTo("insufficient rounds (1 of 3)");
    assertThat(one.measured()).isEqualTo("95 % (1 round)");
    assertThat(two.status()).isEqualTo(Status.INSUFFICIENT_ROUNDS);
    assertThat(two.measured()).isEqualTo("median 93 % (90–95 %, 2 rounds)");
    assertThat(RoundVerdict.MIN_ROUNDS).isEqualTo(3);
  }

  @Test
  void roundsWhoseLimitWasNotMeasuredAgainEachRoundAreNoVerdict() {
    Judgement j = RoundVerdict.judge(rounds(0.8, 0.81, 0.82), SEVENTY, false, "the limit was measured once");

    assertThat(j.status()).isEqualTo(Status.INSUFFICIENT_ROUNDS);
    assertThat(j.verdict()).isEqualTo("insufficient rounds (3 rounds, not interleaved: the limit was measured once)");
  }

  @Test
  void aRoundWithErrorsLeavesTheCheckNotJudged() {
    List<Round> r = new ArrayList<>(rounds(0.8, 0.81));
    r.add(Round.failed("r3", "identity-json-c16 had 12 errors"));

    Judgement j = RoundVerdict.judge(r, SEVENTY, true, null);

    assertThat(j.status()).isEqualTo(Status.NOT_JUDGED);
    assertThat(j.verdict()).isEqualTo("not judged: r3: identity-json-c16 had 12 errors");
  }

  @Test
  void nothingMeasuredIsSaid() {
    assertThat(RoundVerdict.judge(List.of(), SEVENTY, true, null).status()).isEqualTo(Status.NOT_MEASURED);
    assertThat(RoundVerdict.notMeasured(SEVENTY, "mlp-json-c16").verdict()).isEqualTo("not measured (mlp-json-c16)");
  }

  @Test
  void latencyBoundsAndStrictBoundsWork() {
    assertThat(RoundVerdict.judge(rounds(1.76, 1.9, 2.0), P99, true, null).status()).isEqualTo(Status.MET);
    assertThat(RoundVerdict.judge(rounds(2.18, 2.3, 2.01), P99, true, null).verdict())
        .isEqualTo("missed by 0.180 ms (median)");
    Target below50 = new Target(Direction.BELOW, 50, Unit.US);
    assertThat(RoundVerdict.judge(rounds(49.9, 50.0, 45), below50, true, null).status()).isEqualTo(Status.UNSTABLE);
  }

  @Test
  void anEvenNumberOfRoundsTakesTheMeanOfTheMiddleTwo() {
    Judgement j = RoundVerdict.judge(rounds(0.8, 0.74, 0.9, 0.76), SEVENTY, true, null);

    assertThat(j.median()).isEqualTo(0.78, org.assertj.core.data.Offset.offset(1e-12));
    assertThat(j.status()).isEqualTo(Status.MET);
  }

  @Test
  void aMissIsNeverWrittenAsZero() {
    // 59.6 % against 60 %: "missed by 0 points" said nothing
    Judgement j = RoundVerdict.judge(rounds(0.596, 0.596, 0.597),
        new Target(Direction.AT_LEAST, 0.6, Unit.PERCENT), true, null);

    assertThat(j.verdict()).isEqualTo("missed by 0.40 points (median)");
  }

  @Test
  void roundsAreInterleavedOnlyWhenEachRoundsPairFollowsThePrevious() {
    // Kiln, bare, Kiln, bare, Kiln, bare
    assertThat(RoundVerdict.interleaved(List.of(0.0, 100.0, 200.0), List.of(10.0, 110.0, 210.0))).isTrue();
    // bare first in some rounds: still alternating round by round
    assertThat(RoundVerdict.interleaved(List.of(10.0, 100.0, 210.0), List.of(0.0, 110.0, 200.0))).isTrue();
    // the limit measured once at the start and reused by every round
    assertThat(RoundVerdict.interleaved(List.of(100.0, 200.0, 300.0), List.of(0.0, 0.0, 0.0))).isFalse();
    // all of Kiln's runs, then all of the limit's
    assertThat(RoundVerdict.interleaved(List.of(0.0, 10.0, 20.0), List.of(30.0, 40.0, 50.0))).isFalse();
    // the order was not recorded
    assertThat(RoundVerdict.interleaved(List.of(0.0, Double.NaN, 20.0), List.of(1.0, 11.0, 21.0))).isFalse();
  }
}
