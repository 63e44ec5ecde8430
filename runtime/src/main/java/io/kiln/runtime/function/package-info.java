/**
 * Typed references to actor constructors, actor methods and task functions, written as method references
 * ({@code Counter::new}, {@code Counter::add}, {@code Steps::fetch}).
 *
 * <p>They extend {@link java.io.Serializable} only so that the runtime can read, in-process, which class
 * and method a method reference names (the JVM's {@code SerializedLambda}); that is how a call is
 * addressed to another node by class and method name. Nothing is ever Java-serialized: arguments and
 * results cross nodes through the runtime's explicit CBOR codec. On the local path the reference itself is
 * invoked directly.
 */
package io.kiln.runtime.function;
