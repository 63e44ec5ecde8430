package io.kiln.runtime.impl;

import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A dead actor's address keeps answering with its death for a while: other nodes learn that its consumer
 * is gone only as the cluster's subscriptions catch up, and a call routed there meanwhile must fail at once
 * rather than wait for its timeout.
 */
class TombstoneTest {

  /** An actor with nothing to do but exist. */
  public static final class Idle {
    public int ping() {
      return 1;
    }
  }

  @Test
  void aMessageToAKilledActorsAddressIsAnsweredWithItsDeath() {
    try (LocalCluster cluster = LocalCluster.create()) {
      KilnRuntime node = result(cluster.startNode(new NodeOptions("t1", "127.0.0.1", Resources.cpu(1), Map.of())));
      ActorHandle<Idle> c = result(node.actor(Idle::new).name("tomb").remote());
      result(node.kill(c, false));

      // Straight to the address, as a call routed by a stale subscription would arrive.
      Message<Object> answer = result(cluster.vertx().eventBus().request(ActorCell.address(c.actorId()), "call",
          new DeliveryOptions().setSendTimeout(10_000)).toCompletionStage());

      ReplyMessage reply = (ReplyMessage) answer.body();
      assertThat(reply.isError()).isTrue();
      assertThat(reply.error()).isInstanceOf(ActorDiedException.class).hasMessageContaining("killed");
    }
  }
}
