package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PrefixAffinityTest {

  private static final String SYSTEM = "You are a careful assistant. Answer briefly and cite the document you used. "
      + "Never invent a source.";

  private static InferenceRequest prompt(String text, Map<String, Object> parameters) {
    return new InferenceRequest("", List.of(Tensor.ofBytes(TextModels.TEXT_INPUT, new long[] {1},
        List.of(text.getBytes(StandardCharsets.UTF_8)))), List.of(), parameters);
  }

  private record Target(String id, int load) {
  }

  @Test
  void promptsSharingAPrefixShareTheirLeadingKeysAndDifferAfterIt() {
    long[] a = PrefixAffinity.keys(prompt(SYSTEM + " Q: what is Kiln?", Map.of()));
    long[] b = PrefixAffinity.keys(prompt(SYSTEM + " Q: how do pools batch?", Map.of()));
    assertThat(a).hasSize((SYSTEM.length() + 17 + 63) / 64);
    assertThat(a[0]).isEqualTo(b[0]);
    assertThat(a[a.length - 1]).isNotEqualTo(b[b.length - 1]);
    assertThat(PrefixAffinity.keys(InferenceRequest.of(Tensor.ofFloats("x", new long[] {1}, new float[] {1}))))
        .as("no text, no keys").isEmpty();
  }

  @Test
  void aSessionIsTheOnlyKeyOfItsRequests() {
    long[] one = PrefixAffinity.keys(prompt("first turn", Map.of(PrefixAffinity.SESSION_PARAMETER, "s-1")));
    long[] two = PrefixAffinity.keys(prompt("another text", Map.of(PrefixAffinity.SESSION_PARAMETER, "s-1")));
    assertThat(one).hasSize(1).isEqualTo(two);
  }

  @Test
  void theLongestKnownPrefixWinsWhileItsHolderIsNotClearlyBusier() {
    PrefixAffinity affinity = new PrefixAffinity(100, 2);
    long[] shared = PrefixAffinity.keys(prompt(SYSTEM + " Q: one", Map.of()));
    affinity.record(shared, "b");
    long[] next = PrefixAffinity.keys(prompt(SYSTEM + " Q: two", Map.of()));
    List<Target> even = List.of(new Target("a", 0), new Target("b", 1), new Target("c", 0));
    assertThat(affinity.choose(next, even, Target::id, Target::load)).isEqualTo(new Target("b", 1));
    List<Target> busy = List.of(new Target("a", 0), new Target("b", 3), new Target("c", 0));
    assertThat(affinity.choose(next, busy, Target::id, Target::load)).as("3 > 0 + slack 2: balance instead")
        .isNull();
    List<Target> full = List.of(new Target("a", 0), new Target("b", -1));
    assertThat(affinity.choose(next, full, Target::id, Target::load)).as("a holder that cannot take it").isNull();
    assertThat(affinity.choose(PrefixAffinity.keys(prompt("unrelated", Map.of())), even, Target::id, Target::load))
        .isNull();
  }

  @Test
  void theIndexForgetsTheLeastRecentlyUsedKeysBeyondItsCapacity() {
    PrefixAffinity affinity = new PrefixAffinity(2, 2);
    affinity.record(new long[] {1, 2}, "a");
    affinity.record(new long[] {3}, "b");
    assertThat(affinity.size()).isEqualTo(2);
    List<Target> targets = List.of(new Target("a", 0), new Target("b", 0));
    assertThat(affinity.choose(new long[] {1}, targets, Target::id, Target::load)).isNull();
    assertThat(affinity.choose(new long[] {3}, targets, Target::id, Target::load)).isEqualTo(new Target("b", 0));
  }
}
