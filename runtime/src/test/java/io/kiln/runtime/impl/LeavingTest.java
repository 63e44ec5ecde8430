package io.kiln.runtime.impl;

import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.MembershipListener;
import io.kiln.runtime.Resources;
import io.kiln.runtime.TimeoutPolicy;
import io.kiln.runtime.spi.cluster.ClusterBackend;
import io.kiln.runtime.spi.cluster.SharedMap;
import io.kiln.runtime.testing.TestNodes;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * A node shutting down while the cluster's maps do not answer (an operation waiting on a partition whose owner has
 * just died) still leaves the cluster, past the clean-up's bound, instead of hanging its process's exit.
 */
class LeavingTest {

  /** A member whose map removals never complete once {@link #hang} is set; counts its leave. */
  static final class StuckRemovals implements ClusterBackend {
    final ClusterBackend member;
    final AtomicBoolean hang = new AtomicBoolean();
    final AtomicBoolean left = new AtomicBoolean();

    StuckRemovals(ClusterBackend member) {
      this.member = member;
    }

    @Override
    public String localMemberId() {
      return member.localMemberId();
    }

    @Override
    public List<String> members() {
      return member.members();
    }

    @Override
    public boolean isLeader() {
      return member.isLeader();
    }

    @Override
    public SharedMap map(String name) {
      SharedMap m = member.map(name);
      return new SharedMap() {
        @Override
        public String name() {
          return m.name();
        }

        @Override
        public CompletionStage<Optional<String>> get(String key) {
          return m.get(key);
        }

        @Override
        public CompletionStage<Void> put(String key, String value) {
          return m.put(key, value);
        }

        @Override
        public CompletionStage<Optional<String>> putIfAbsent(String key, String value) {
          return m.putIfAbsent(key, value);
        }

        @Override
        public CompletionStage<Boolean> replace(String key, String expected, String update) {
          return m.replace(key, expected, update);
        }

        @Override
        public CompletionStage<Void> remove(String key) {
          return hang.get() ? new CompletableFuture<>() : m.remove(key);
        }

        @Override
        public CompletionStage<Boolean> remove(String key, String expected) {
          return hang.get() ? new CompletableFuture<>() : m.remove(key, expected);
        }

        @Override
        public CompletionStage<Map<String, String>> entries() {
          return m.entries();
        }

        @Override
        public String addListener(EntryListener listener) {
          return m.addListener(listener);
        }

        @Override
        public void removeListener(String registrationId) {
          m.removeListener(registrationId);
        }
      };
    }

    @Override
    public void addMembershipListener(MembershipListener listener) {
      member.addMembershipListener(listener);
    }

    @Override
    public CompletionStage<Void> leave() {
      left.set(true);
      return member.leave();
    }
  }

  @Test
  void aNodeWhoseClusterMapsDoNotAnswerLeavesOnceTheCleanUpBoundHasPassed() throws Exception {
    Vertx vertx = Vertx.vertx();
    try (InMemoryCluster cluster = new InMemoryCluster()) {
      StuckRemovals backend = new StuckRemovals(cluster.join("leaver"));
      RuntimeImpl rt = result(RuntimeImpl.start(vertx, backend, TestNodes.node("leaver", Resources.cpu(1)),
          Future::succeededFuture).toCompletionStage());
      backend.hang.set(true);

      long began = System.nanoTime();
      rt.shutdown(TimeoutPolicy.LEAVE_CLEANUP.withTimeout(Duration.ofMillis(300)))
          .toCompletableFuture().get(10, TimeUnit.SECONDS);
      assertThat(Duration.ofNanos(System.nanoTime() - began)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
      assertThat(backend.left).as("left the cluster").isTrue();
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }
}
