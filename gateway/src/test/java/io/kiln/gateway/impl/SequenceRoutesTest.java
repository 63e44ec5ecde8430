package io.kiln.gateway.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.kiln.gateway.spi.PoolEndpoint;
import io.kiln.pools.InferenceException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Where a sequence's requests go: the same node from every gateway (a rendezvous hash of the id over the serving
 * nodes), spread over the nodes, kept by a gateway while the node serves, and a clear error once it does not.
 */
class SequenceRoutesTest {

  static PoolEndpoint pool(String node, boolean ready) {
    return new PoolEndpoint(node, false, ready, 0, 0, 16);
  }

  static Map<String, Object> params(Object id, boolean start) {
    Map<String, Object> p = new HashMap<>();
    p.put("sequence_id", id);
    p.put("sequence_start", start);
    return p;
  }

  @Test
  void everyGatewayPicksTheSameNodeWhateverTheOrderOfThePoolsAndIdsSpreadOverTheNodes() {
    List<PoolEndpoint> pools = List.of(pool("a", true), pool("b", true), pool("c", true));
    List<PoolEndpoint> reversed = List.of(pools.get(2), pools.get(1), pools.get(0));
    Map<String, Integer> perNode = new HashMap<>();
    for (int i = 0; i < 3000; i++) {
      String node = new SequenceRoutes().node("vad", params((long) i + 1, true), pools);
      assertThat(new SequenceRoutes().node("vad", params(Long.toString(i + 1), true), reversed))
          .as("another gateway, the id as a string, the pools listed otherwise").isEqualTo(node);
      perNode.merge(node, 1, Integer::sum);
    }
    assertThat(perNode).containsOnlyKeys("a", "b", "c");
    assertThat(perNode.values()).allSatisfy(n -> assertThat(n).isBetween(800, 1200));
  }

  @Test
  void aNodeJoiningMovesOnlyTheSequencesItWinsAndAGatewayKeepsThoseItRouted() {
    List<PoolEndpoint> two = List.of(pool("a", true), pool("b", true));
    List<PoolEndpoint> three = new ArrayList<>(two);
    three.add(pool("c", true));
    SequenceRoutes gateway = new SequenceRoutes();
    int moved = 0;
    for (int i = 1; i <= 3000; i++) {
      String before = gateway.node("vad", params((long) i, true), two);
      String fresh = SequenceRoutes.rendezvous(Integer.toString(i), three);
      if (!fresh.equals(before)) {
        assertThat(fresh).as("only to the new node").isEqualTo("c");
        moved++;
      }
      assertThat(gateway.node("vad", params((long) i, false), three)).as("the gateway that routed it keeps it")
          .isEqualTo(before);
    }
    assertThat(moved).isBetween(800, 1200);
  }

  @Test
  void aSequenceWhoseNodeStoppedServingFailsNamingTheSequenceAndTheNodeUnlessItStartsAgain() {
    SequenceRoutes gateway = new SequenceRoutes();
    List<PoolEndpoint> pools = List.of(pool("a", true), pool("b", true));
    String node = gateway.node("vad", params("s-1", true), pools);
    String other = node.equals("a") ? "b" : "a";
    List<PoolEndpoint> left = List.of(pool(other, true));

    InferenceException e = catchThrowableOfType(InferenceException.class,
        () -> gateway.node("vad", params("s-1", false), left));
    assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE);
    assertThat(e.getMessage()).contains("sequence 's-1' was lost", "node '" + node + "'", "sequence_start");
    assertThat(gateway.node("vad", params("s-1", true), left)).isEqualTo(other);
  }

  @Test
  void requestsWithoutASequenceAreRoutedAsAnyAndBadParametersAreRefusedNamingThem() {
    SequenceRoutes gateway = new SequenceRoutes();
    List<PoolEndpoint> pools = List.of(pool("a", true));
    assertThat(gateway.node("vad", Map.of(), pools)).isNull();
    assertThat(gateway.node("vad", params(new BigInteger("18446744073709551615"), true), pools)).isEqualTo("a");
    assertThat(catchThrowableOfType(InferenceException.class, () -> gateway.node("vad", params(-3L, true), pools)))
        .hasMessageContaining("parameters.sequence_id");
    Map<String, Object> bad = params(1L, true);
    bad.put("sequence_end", "yes");
    assertThat(catchThrowableOfType(InferenceException.class, () -> gateway.node("vad", bad, pools)))
        .hasMessageContaining("parameters.sequence_end");
    assertThat(catchThrowableOfType(InferenceException.class,
        () -> gateway.node("vad", params(1L, true), List.of(pool("a", false)))))
        .hasMessageContaining("no ready pool");
  }
}
