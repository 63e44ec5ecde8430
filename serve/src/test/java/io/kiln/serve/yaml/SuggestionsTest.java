package io.kiln.serve.yaml;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class SuggestionsTest {

  private static final List<String> FIELDS = List.of("name", "version", "model", "pool", "batching", "queue");

  @Test
  void nearMissesAreSuggested() {
    assertThat(Suggestions.closest("verison", FIELDS)).contains("version"); // swapped letters count once
    assertThat(Suggestions.closest("modle", FIELDS)).contains("model");
    assertThat(Suggestions.closest("Batching", FIELDS)).contains("batching");
    assertThat(Suggestions.closest("workersPerNode", List.of("workers_per_node", "per_gpu"))).contains("workers_per_node");
    assertThat(Suggestions.closest("max-queued", List.of("max_queued"))).contains("max_queued");
  }

  @Test
  void farOrShortWordsAreNot() {
    assertThat(Suggestions.closest("colour", FIELDS)).isEmpty();
    assertThat(Suggestions.closest("uri", FIELDS)).isEmpty();
    assertThat(Suggestions.closest("x".repeat(100), FIELDS)).isEmpty();
    assertThat(Suggestions.distance("kitten", "sitting")).isEqualTo(3);
  }
}
