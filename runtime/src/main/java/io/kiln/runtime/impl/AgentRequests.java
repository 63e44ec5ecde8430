package io.kiln.runtime.impl;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.type.TypeReference;
import io.kiln.runtime.ActorOptions;
import io.kiln.runtime.Resources;
import io.kiln.runtime.WireCodec;
import java.io.IOException;
import java.util.Map;

/** Requests a node agent serves: create an actor, run a task. By reference locally, CBOR across nodes. */
final class AgentRequests {

  private static final TypeReference<Map<String, Object>> MAP = new TypeReference<>() {
  };

  private AgentRequests() {
  }

  /**
   * Reserve resources and create an actor here.
   *
   * @param pendingRecordJson the registry entry the creator wrote for a named actor, or null
   */
  record CreateActor(String actorId, MethodRef ctor, Object ctorFn, Object[] args, ActorOptions options,
                     String ownerNodeId, String ownerActorId, String pendingRecordJson, int restarts) {

    CreateActor relocated(String pendingJson, int newRestarts) {
      return new CreateActor(actorId, ctor, ctorFn, args, options, ownerNodeId, ownerActorId, pendingJson, newRestarts);
    }
  }

  /** A creation request as text for the registry (so the leader can re-create the actor), or null if its
   *  arguments cannot be encoded. */
  static String armour(CreateActor req) {
    try {
      io.vertx.core.buffer.Buffer buf = io.vertx.core.buffer.Buffer.buffer();
      new CreateActorCodec().encodeToWire(buf, req.relocated(null, 0));
      return java.util.Base64.getEncoder().encodeToString(buf.getBytes());
    } catch (RuntimeException e) {
      return null;
    }
  }

  static CreateActor unarmour(String text) {
    io.vertx.core.buffer.Buffer buf = io.vertx.core.buffer.Buffer.buffer(java.util.Base64.getDecoder().decode(text));
    return new CreateActorCodec().decodeFromWire(0, buf);
  }

  /** Reserve resources and run a task here. */
  record RunTask(String taskId, MethodRef fn, Object taskFn, Object[] args, Resources resources, long timeoutMs,
                 io.kiln.runtime.SchedulingStrategy strategy) {
  }

  static final class CreateActorCodec extends WireMessageCodec<CreateActor> {
    CreateActorCodec() {
      super("kiln.create-actor");
    }

    @Override
    void encode(JsonGenerator gen, CreateActor m) throws IOException {
      gen.writeStartArray();
      gen.writeString(m.actorId());
      gen.writeString(m.ctor().key());
      CallMessage.writeArgs(gen, m.ctor(), m.args(), false);
      WireValues.write(gen, Map.class, OptionsJson.actorOptions(m.options()));
      gen.writeString(m.ownerNodeId());
      gen.writeString(m.ownerActorId());
      gen.writeString(m.pendingRecordJson());
      gen.writeNumber(m.restarts());
      gen.writeEndArray();
    }

    @Override
    CreateActor decode(JsonParser p) throws IOException {
      p.nextToken();
      String actorId = nextString(p);
      MethodRef ctor = Lambdas.byKey(nextString(p));
      Object[] args = CallMessage.readArgs(p, ctor, false);
      p.nextToken();
      ActorOptions options = OptionsJson.actorOptions(WireCodec.cbor().readValue(p, MAP));
      String ownerNode = nextString(p);
      String ownerActor = nextString(p);
      String pending = nextString(p);
      int restarts = nextInt(p);
      return new CreateActor(actorId, ctor, null, args, options, ownerNode, ownerActor, pending, restarts);
    }
  }

  static final class RunTaskCodec extends WireMessageCodec<RunTask> {
    RunTaskCodec() {
      super("kiln.run-task");
    }

    @Override
    void encode(JsonGenerator gen, RunTask m) throws IOException {
      gen.writeStartArray();
      gen.writeString(m.taskId());
      gen.writeString(m.fn().key());
      CallMessage.writeArgs(gen, m.fn(), m.args(), false);
      WireValues.write(gen, Map.class, m.resources().units());
      gen.writeNumber(m.timeoutMs());
      WireValues.write(gen, Map.class, OptionsJson.strategy(m.strategy()));
      gen.writeEndArray();
    }

    @Override
    RunTask decode(JsonParser p) throws IOException {
      p.nextToken();
      String taskId = nextString(p);
      MethodRef fn = Lambdas.byKey(nextString(p));
      Object[] args = CallMessage.readArgs(p, fn, false);
      p.nextToken();
      Resources res = OptionsJson.resources(WireCodec.cbor().readValue(p, MAP));
      long timeout = nextLong(p);
      p.nextToken();
      io.kiln.runtime.SchedulingStrategy strategy = OptionsJson.strategy(WireCodec.cbor().readValue(p, MAP));
      return new RunTask(taskId, fn, null, args, res, timeout, strategy);
    }
  }
}
