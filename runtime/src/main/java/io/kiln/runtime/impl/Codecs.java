package io.kiln.runtime.impl;

import io.vertx.core.Vertx;
import io.vertx.core.eventbus.EventBus;
import java.util.Collections;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * Registers the runtime's message codecs once per Vert.x instance (several nodes may share one), and turns
 * off Vert.x's Java-serialization codecs.
 */
final class Codecs {

  private static final Set<Vertx> REGISTERED = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  private Codecs() {
  }

  static void register(Vertx vertx) {
    if (!REGISTERED.add(vertx)) {
      return;
    }
    EventBus bus = vertx.eventBus();
    // Kiln's messages have explicit codecs. Vert.x would otherwise carry Serializable and ClusterSerializable
    // bodies with built-in codecs that deserialize the class a peer names (BigInteger, BigDecimal... by
    // default): refuse every class, sending and receiving, so no Java deserialization is reachable.
    bus.serializableChecker(className -> false);
    bus.clusterSerializableChecker(className -> false);
    bus.registerDefaultCodec(CallMessage.class, new CallMessage.Codec());
    bus.registerDefaultCodec(ReplyMessage.class, new ReplyMessage.Codec());
    bus.registerDefaultCodec(AgentRequests.CreateActor.class, new AgentRequests.CreateActorCodec());
    bus.registerDefaultCodec(AgentRequests.RunTask.class, new AgentRequests.RunTaskCodec());
  }
}
