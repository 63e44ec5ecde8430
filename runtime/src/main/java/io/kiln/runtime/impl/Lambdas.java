package io.kiln.runtime.impl;

import java.io.Serializable;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.SerializedLambda;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.Arrays;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Resolves method references to {@link MethodRef}s. A method reference's class is generated once per
 * call site, so resolution is cached per lambda class and costs a map lookup after the first call.
 *
 * <p>Reading a lambda's {@link SerializedLambda} is an in-process reflective call; nothing is serialized.
 */
final class Lambdas {

  private static final ConcurrentHashMap<Class<?>, MethodRef> CACHE = new ConcurrentHashMap<>();
  private static final ConcurrentHashMap<String, MethodRef> BY_KEY = new ConcurrentHashMap<>();

  private Lambdas() {
  }

  /**
   * The method a method reference (or non-capturing lambda) names.
   *
   * @throws IllegalArgumentException if {@code fn} is not a serializable lambda
   */
  static MethodRef resolve(Serializable fn) {
    MethodRef cached = CACHE.get(fn.getClass());
    if (cached != null) {
      return cached;
    }
    MethodRef ref = fromSerializedLambda(serializedLambda(fn), fn.getClass().getClassLoader());
    CACHE.putIfAbsent(fn.getClass(), ref);
    BY_KEY.putIfAbsent(ref.key(), ref);
    return ref;
  }

  /** Whether the lambda captured values (those cannot be sent to another node). */
  static int capturedArgCount(Serializable fn) {
    return serializedLambda(fn).getCapturedArgCount();
  }

  /**
   * Resolves a wire key ({@code class#method descriptor}) received from another node.
   *
   * @throws IllegalArgumentException if the class or method does not exist here
   */
  static MethodRef byKey(String key) {
    MethodRef cached = BY_KEY.get(key);
    if (cached != null) {
      return cached;
    }
    int hash = key.indexOf('#');
    int paren = key.indexOf('(', hash);
    if (hash <= 0 || paren < 0) {
      throw new IllegalArgumentException("malformed method key: " + key);
    }
    String className = key.substring(0, hash);
    String name = key.substring(hash + 1, paren);
    String descriptor = key.substring(paren);
    try {
      Class<?> owner = Class.forName(className, false, Lambdas.class.getClassLoader());
      MethodRef ref = build(owner, name, descriptor, !name.equals("<init>") && !isStatic(owner, name, descriptor));
      BY_KEY.putIfAbsent(key, ref);
      return ref;
    } catch (ClassNotFoundException e) {
      throw new IllegalArgumentException("unknown class in method key: " + key);
    }
  }

  private static boolean isStatic(Class<?> owner, String name, String descriptor) {
    return Modifier.isStatic(findMethod(owner, name, descriptor).getModifiers());
  }

  private static SerializedLambda serializedLambda(Serializable fn) {
    try {
      Method writeReplace = fn.getClass().getDeclaredMethod("writeReplace");
      writeReplace.setAccessible(true);
      Object replaced = writeReplace.invoke(fn);
      if (replaced instanceof SerializedLambda sl) {
        return sl;
      }
    } catch (ReflectiveOperationException | RuntimeException e) {
      throw new IllegalArgumentException("expected a method reference such as Counter::add, got " + fn.getClass(), e);
    }
    throw new IllegalArgumentException("expected a method reference such as Counter::add, got " + fn.getClass());
  }

  private static MethodRef fromSerializedLambda(SerializedLambda sl, ClassLoader loader) {
    try {
      Class<?> owner = Class.forName(sl.getImplClass().replace('/', '.'), false,
          loader != null ? loader : Lambdas.class.getClassLoader());
      int kind = sl.getImplMethodKind();
      boolean receiver = kind == 5 || kind == 7 || kind == 9; // invokeVirtual, invokeSpecial, invokeInterface
      return build(owner, sl.getImplMethodName(), sl.getImplMethodSignature(), receiver);
    } catch (ClassNotFoundException e) {
      throw new IllegalArgumentException("cannot load " + sl.getImplClass(), e);
    }
  }

  private static MethodRef build(Class<?> owner, String name, String descriptor, boolean receiver) {
    MethodHandles.Lookup lookup = MethodHandles.lookup();
    try {
      if (name.equals("<init>")) {
        Constructor<?> ctor = findConstructor(owner, descriptor);
        ctor.setAccessible(true);
        MethodHandle mh = lookup.unreflectConstructor(ctor);
        return new MethodRef(owner, name, descriptor, ctor.getGenericParameterTypes(), owner, false, false, ctor,
            spread(mh, ctor.getParameterCount()));
      }
      Method m = findMethod(owner, name, descriptor);
      m.setAccessible(true);
      MethodHandle mh = lookup.unreflect(m);
      Type ret = m.getGenericReturnType();
      boolean async = CompletionStage.class.isAssignableFrom(m.getReturnType());
      Type result = async ? futureValueType(ret) : (m.getReturnType() == void.class ? Void.class : ret);
      int arity = m.getParameterCount() + (receiver ? 1 : 0);
      return new MethodRef(owner, name, descriptor, m.getGenericParameterTypes(), result, async, receiver, m,
          spread(mh, arity));
    } catch (IllegalAccessException e) {
      throw new IllegalArgumentException("cannot access " + owner.getName() + "." + name, e);
    }
  }

  private static MethodHandle spread(MethodHandle mh, int arity) {
    return mh.asType(MethodType.genericMethodType(arity)).asSpreader(Object[].class, arity);
  }

  private static Type futureValueType(Type ret) {
    if (ret instanceof ParameterizedType p && p.getActualTypeArguments().length == 1) {
      return p.getActualTypeArguments()[0];
    }
    return Object.class;
  }

  private static Method findMethod(Class<?> owner, String name, String descriptor) {
    for (Class<?> c = owner; c != null; c = c.getSuperclass()) {
      for (Method m : c.getDeclaredMethods()) {
        if (m.getName().equals(name) && descriptorOf(m.getParameterTypes(), m.getReturnType()).equals(descriptor)) {
          return m;
        }
      }
    }
    for (Class<?> i : owner.getInterfaces()) {
      for (Method m : i.getMethods()) {
        if (m.getName().equals(name) && descriptorOf(m.getParameterTypes(), m.getReturnType()).equals(descriptor)) {
          return m;
        }
      }
    }
    throw new IllegalArgumentException("no method " + owner.getName() + "." + name + descriptor);
  }

  private static Constructor<?> findConstructor(Class<?> owner, String descriptor) {
    for (Constructor<?> c : owner.getDeclaredConstructors()) {
      if (descriptorOf(c.getParameterTypes(), void.class).equals(descriptor)) {
        return c;
      }
    }
    throw new IllegalArgumentException("no constructor " + owner.getName() + descriptor);
  }

  static String descriptorOf(Class<?>[] params, Class<?> ret) {
    return MethodType.methodType(ret, params).toMethodDescriptorString();
  }

  static String describe(Executable e) {
    return e.getDeclaringClass().getSimpleName() + "." + e.getName() + Arrays.toString(e.getParameterTypes());
  }
}
