package io.kiln.runtime.impl;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import java.io.IOException;
import java.lang.reflect.Type;

/**
 * One call to an actor method. On one node it carries the method reference itself ({@code fn}), invoked
 * directly; from another node only the method's key and the CBOR-decoded arguments.
 */
final class CallMessage {

  final MethodRef method;
  /** The caller's lambda, or null when decoded from the wire (then invoked through {@link MethodRef#invoker()}). */
  final Object fn;
  final Object[] args;

  CallMessage(MethodRef method, Object fn, Object[] args) {
    this.method = method;
    this.fn = fn;
    this.args = args;
  }

  /** Generic types of the wire arguments: for an actor method written as a lambda, the first parameter is the actor. */
  static Type[] wireTypes(MethodRef m, boolean actorMethod) {
    Type[] types = m.parameterTypes();
    if (actorMethod && !m.receiver() && types.length > 0) {
      Type[] rest = new Type[types.length - 1];
      System.arraycopy(types, 1, rest, 0, rest.length);
      return rest;
    }
    return types;
  }

  static void writeArgs(JsonGenerator gen, MethodRef method, Object[] args, boolean actorMethod) throws IOException {
    Type[] types = wireTypes(method, actorMethod);
    if (types.length != args.length) {
      throw new IllegalArgumentException(method.displayName() + " takes " + types.length + " arguments, got " + args.length);
    }
    gen.writeStartArray();
    for (int i = 0; i < args.length; i++) {
      WireValues.write(gen, types[i], args[i]);
    }
    gen.writeEndArray();
  }

  static Object[] readArgs(JsonParser p, MethodRef method, boolean actorMethod) throws IOException {
    Type[] types = wireTypes(method, actorMethod);
    p.nextToken(); // START_ARRAY
    Object[] args = new Object[types.length];
    for (int i = 0; i < types.length; i++) {
      args[i] = WireValues.read(p, types[i]);
    }
    p.nextToken(); // END_ARRAY
    return args;
  }

  static final class Codec extends WireMessageCodec<CallMessage> {
    Codec() {
      super("kiln.call");
    }

    @Override
    void encode(JsonGenerator gen, CallMessage m) throws IOException {
      if (m.fn != null && m.method.methodName().startsWith("lambda$") && Lambdas.capturedArgCount((java.io.Serializable) m.fn) > 0) {
        throw new IllegalArgumentException("a lambda that captures variables cannot be sent to another node; "
            + "use a method reference such as Counter::add");
      }
      gen.writeStartArray();
      gen.writeString(m.method.key());
      writeArgs(gen, m.method, m.args, true);
      gen.writeEndArray();
    }

    @Override
    CallMessage decode(JsonParser p) throws IOException {
      p.nextToken();
      MethodRef method = Lambdas.byKey(nextString(p));
      Object[] args = readArgs(p, method, true);
      return new CallMessage(method, null, args);
    }
  }
}
