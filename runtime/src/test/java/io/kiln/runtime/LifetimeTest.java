package io.kiln.runtime;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.TestActors.Counter;
import io.kiln.runtime.TestActors.Parent;
import io.kiln.runtime.testing.TestNodes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class LifetimeTest {

  static KilnRuntime runtime;

  @BeforeAll
  static void start() {
    runtime = TestNodes.single("lifetimes", Resources.cpu(2));
  }

  @AfterAll
  static void stop() {
    runtime.close();
  }

  @Test
  void ownedChildrenDieWithTheirOwnerActorDetachedOnesSurvive() {
    ActorHandle<Parent> parent = result(runtime.actor(Parent::new).remote());
    result(parent.call(Parent::spawn, "owned-child", false));
    result(parent.call(Parent::spawn, "detached-child", true));
    ActorHandle<Counter> owned = result(runtime.getActor("default", "owned-child", Counter.class));
    ActorHandle<Counter> detached = result(runtime.getActor("default", "detached-child", Counter.class));

    result(runtime.kill(parent, false));

    await().untilAsserted(() -> assertThat(failure(owned.call(Counter::get)))
        .isInstanceOf(ActorDiedException.class).hasMessageContaining("owner actor"));
    assertThat(result(detached.call(Counter::add, 1))).isEqualTo(1);
  }
}
