package io.kiln.runtime;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.testing.TestNodes;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Typed shared stores over the cluster's maps, seen from two nodes of one in-memory cluster. */
class SharedStoreTest {

  public record Item(String name, int count) {
  }

  LocalCluster cluster;
  KilnRuntime a;
  KilnRuntime b;

  @BeforeEach
  void start() {
    cluster = LocalCluster.create();
    a = TestNodes.start(cluster, "a", Resources.cpu(1));
    b = TestNodes.start(cluster, "b", Resources.cpu(1));
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  @Test
  void valuesWrittenOnOneNodeReadDecodedOnAnother() {
    result(a.store("test.items", Item.class).put("x", new Item("x", 1)));
    SharedStore<Item> onB = b.store("test.items", Item.class);
    assertThat(onB.name()).isEqualTo("test.items");
    assertThat(result(onB.get("x")).map(SharedStore.Entry::value)).contains(new Item("x", 1));
    assertThat(result(onB.get("y"))).isEmpty();
    // The stored form is plain WireCodec JSON, as the raw maps held before.
    assertThat(result(onB.get("x")).orElseThrow().version()).isEqualTo(WireCodec.toJson(new Item("x", 1)));
    assertThat(result(onB.entries())).containsOnlyKeys("x");
  }

  @Test
  void conditionalWritesCompareTheStoredForm() {
    SharedStore<Item> store = a.store("test.cas", Item.class);
    assertThat(result(store.putIfAbsent("k", new Item("k", 1)))).isEmpty();
    Optional<SharedStore.Entry<Item>> taken = result(store.putIfAbsent("k", new Item("k", 2)));
    assertThat(taken.map(SharedStore.Entry::value)).contains(new Item("k", 1));

    SharedStore.Entry<Item> first = taken.orElseThrow();
    assertThat(result(store.replace("k", first, new Item("k", 3)))).isTrue();
    assertThat(result(store.replace("k", first, new Item("k", 4)))).isFalse(); // stale version
    SharedStore.Entry<Item> third = result(b.store("test.cas", Item.class).get("k")).orElseThrow();
    assertThat(third.value()).isEqualTo(new Item("k", 3));
    assertThat(result(store.remove("k", first))).isFalse();
    assertThat(result(store.remove("k", third))).isTrue();
    assertThat(result(store.get("k"))).isEmpty();

    result(store.put("gone", new Item("gone", 1)));
    result(store.remove("gone"));
    assertThat(result(store.entries())).isEmpty();
  }

  @Test
  void listenersSeeDecodedChangesFromOtherNodes() {
    SharedStore<Item> onA = a.store("test.listen", Item.class);
    List<String> seen = new CopyOnWriteArrayList<>();
    String id = onA.addListener((key, entry) -> seen.add(key + "=" + (entry == null ? "removed" : entry.value().count())));
    SharedStore<Item> onB = b.store("test.listen", Item.class);
    result(onB.put("k", new Item("k", 7)));
    result(onB.remove("k"));
    await().until(() -> seen.size() == 2);
    assertThat(seen).containsExactly("k=7", "k=removed");
    onA.removeListener(id);
    result(onB.put("k", new Item("k", 8)));
    assertThat(result(onA.get("k")).orElseThrow().value().count()).isEqualTo(8);
    assertThat(seen).hasSize(2);
  }

  @Test
  void anEntryThatDoesNotDecodeIsReportedWithItsStoreAndKeyAndCanStillBeReplaced() {
    result(a.store("test.mixed", String.class).put("bad", "not an item"));
    result(a.store("test.mixed", Item.class).put("good", new Item("good", 1)));
    SharedStore<Item> store = b.store("test.mixed", Item.class);

    Map<String, SharedStore.Entry<Item>> all = result(store.entries());
    assertThat(all.get("good").readable()).isTrue();
    SharedStore.Entry<Item> bad = all.get("bad");
    assertThat(bad.readable()).isFalse();
    assertThatThrownBy(bad::value).isInstanceOf(UnreadableEntryException.class)
        .hasMessageContaining("bad").hasMessageContaining("test.mixed");

    assertThat(result(store.replace("bad", bad, new Item("bad", 2)))).isTrue();
    assertThat(result(store.get("bad")).orElseThrow().value()).isEqualTo(new Item("bad", 2));
  }

  @Test
  void customCodecsStoreTheirOwnForm() {
    StoreCodec<Integer> hex = new StoreCodec<>() {
      @Override
      public String encode(Integer value) {
        return "\"" + Integer.toHexString(value) + "\"";
      }

      @Override
      public Integer decode(String stored) {
        return Integer.parseInt(stored.substring(1, stored.length() - 1), 16);
      }
    };
    result(a.store("test.hex", hex).put("n", 255));
    assertThat(result(b.store("test.hex", String.class).get("n")).orElseThrow().value()).isEqualTo("ff");
    assertThat(result(b.store("test.hex", hex).get("n")).orElseThrow().value()).isEqualTo(255);
  }

  @Test
  void aValueThatDoesNotEncodeFailsTheWrite() {
    StoreCodec<Item> refusing = new StoreCodec<>() {
      @Override
      public String encode(Item value) {
        throw new IllegalArgumentException("no");
      }

      @Override
      public Item decode(String stored) {
        return null;
      }
    };
    assertThat(failure(a.store("test.refuse", refusing).put("k", new Item("k", 1))))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void membershipIsPublicApi() {
    assertThat(a.members()).containsExactlyInAnyOrder("a", "b");
    assertThat(a.isLeader()).isTrue();
    assertThat(b.isLeader()).isFalse();
    List<String> left = new CopyOnWriteArrayList<>();
    List<Boolean> leading = new CopyOnWriteArrayList<>();
    b.addMembershipListener(new MembershipListener() {
      @Override
      public void memberLeft(String memberId) {
        left.add(memberId);
      }

      @Override
      public void leaderChanged(boolean isLeader) {
        leading.add(isLeader);
      }
    });
    cluster.crash("a");
    await().until(() -> left.contains("a") && leading.contains(true));
    assertThat(b.members()).containsExactly("b");
    assertThat(b.isLeader()).isTrue();
  }
}
