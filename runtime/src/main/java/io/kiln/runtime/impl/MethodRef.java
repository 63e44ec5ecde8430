package io.kiln.runtime.impl;

import java.lang.invoke.MethodHandle;
import java.lang.reflect.Executable;
import java.lang.reflect.Type;
import java.util.Objects;

/**
 * The class and method (or constructor) a method reference names, resolved once per call site: the key
 * that addresses it on the wire, the generic types the codec encodes its arguments and result with, and a
 * handle to invoke it by name when the call came from another node.
 *
 * @param ownerClass the declaring class
 * @param methodName the method's name, {@code <init>} for a constructor
 * @param descriptor the JVM method descriptor, e.g. {@code (I)I}
 * @param parameterTypes generic types of the arguments (the receiver excluded)
 * @param resultType generic type of the result: for an asynchronous method the future's value type,
 *     {@code Void.class} for void methods, the class for constructors
 * @param async whether the method returns a {@link java.util.concurrent.CompletionStage}
 * @param receiver whether the first argument of the reference is the receiver (instance method)
 * @param invoker spreads {@code (receiver?, args...)} into the method; null until needed
 */
record MethodRef(Class<?> ownerClass, String methodName, String descriptor, Type[] parameterTypes, Type resultType,
                 boolean async, boolean receiver, Executable executable, MethodHandle invoker) {

  MethodRef {
    Objects.requireNonNull(ownerClass);
    Objects.requireNonNull(methodName);
    Objects.requireNonNull(descriptor);
  }

  /** Wire key: {@code class#method descriptor}. */
  String key() {
    return ownerClass.getName() + "#" + methodName + descriptor;
  }

  String displayName() {
    return ownerClass.getSimpleName() + "." + methodName;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof MethodRef m && m.key().equals(key());
  }

  @Override
  public int hashCode() {
    return key().hashCode();
  }

  @Override
  public String toString() {
    return key();
  }
}
