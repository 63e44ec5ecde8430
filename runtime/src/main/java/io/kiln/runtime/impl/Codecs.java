package io.kiln.runtime.impl;

import io.vertx.core.Vertx;
import io.vertx.core.eventbus.EventBus;
import java.util.Collections;
import java.util.Set;
import java.util.WeakHashMap;

/** Registers the runtime's message codecs once per Vert.x instance (several nodes may share one). */
final class Codecs {

  private static final Set<Vertx> REGISTERED = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  private Codecs() {
  }

  static void register(Vertx vertx) {
    if (!REGISTERED.add(vertx)) {
      return;
    }
    EventBus bus = vertx.eventBus();
    bus.registerDefaultCodec(CallMessage.class, new CallMessage.Codec());
    bus.registerDefaultCodec(ReplyMessage.class, new ReplyMessage.Codec());
    bus.registerDefaultCodec(AgentRequests.CreateActor.class, new AgentRequests.CreateActorCodec());
    bus.registerDefaultCodec(AgentRequests.RunTask.class, new AgentRequests.RunTaskCodec());
  }
}
