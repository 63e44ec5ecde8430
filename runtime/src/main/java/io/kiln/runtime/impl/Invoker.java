package io.kiln.runtime.impl;

import io.kiln.runtime.function.ActorAsyncMethod0;
import io.kiln.runtime.function.ActorAsyncMethod1;
import io.kiln.runtime.function.ActorAsyncMethod2;
import io.kiln.runtime.function.ActorFactory0;
import io.kiln.runtime.function.ActorFactory1;
import io.kiln.runtime.function.ActorFactory2;
import io.kiln.runtime.function.ActorFactory3;
import io.kiln.runtime.function.ActorMethod0;
import io.kiln.runtime.function.ActorMethod1;
import io.kiln.runtime.function.ActorMethod2;
import io.kiln.runtime.function.ActorMethod3;
import io.kiln.runtime.function.ActorVoidMethod0;
import io.kiln.runtime.function.ActorVoidMethod1;
import io.kiln.runtime.function.ActorVoidMethod2;
import io.kiln.runtime.function.TaskFunction0;
import io.kiln.runtime.function.TaskFunction1;
import io.kiln.runtime.function.TaskFunction2;
import io.kiln.runtime.function.TaskFunction3;
import java.lang.invoke.MethodHandle;

/**
 * Invokes constructors, actor methods and task functions: directly through the caller's method
 * reference when it was passed by reference (one node), or by name through a method handle when the call
 * came from another node. {@code InvocationTargetException}-style wrapping never happens: the method's
 * own throwable propagates.
 */
final class Invoker {

  private Invoker() {
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  static Object construct(Object fn, MethodRef ctor, Object[] a) throws Throwable {
    if (fn != null) {
      if (fn instanceof ActorFactory0 f) {
        return f.create();
      } else if (fn instanceof ActorFactory1 f) {
        return f.create(a[0]);
      } else if (fn instanceof ActorFactory2 f) {
        return f.create(a[0], a[1]);
      } else if (fn instanceof ActorFactory3 f) {
        return f.create(a[0], a[1], a[2]);
      }
    }
    return byHandle(ctor.invoker(), a);
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  static Object callActor(Object fn, MethodRef method, Object actor, Object[] a) throws Throwable {
    if (fn != null) {
      if (fn instanceof ActorMethod0 f) {
        return f.apply(actor);
      } else if (fn instanceof ActorMethod1 f) {
        return f.apply(actor, a[0]);
      } else if (fn instanceof ActorMethod2 f) {
        return f.apply(actor, a[0], a[1]);
      } else if (fn instanceof ActorMethod3 f) {
        return f.apply(actor, a[0], a[1], a[2]);
      } else if (fn instanceof ActorVoidMethod0 f) {
        f.apply(actor);
        return null;
      } else if (fn instanceof ActorVoidMethod1 f) {
        f.apply(actor, a[0]);
        return null;
      } else if (fn instanceof ActorVoidMethod2 f) {
        f.apply(actor, a[0], a[1]);
        return null;
      } else if (fn instanceof ActorAsyncMethod0 f) {
        return f.apply(actor);
      } else if (fn instanceof ActorAsyncMethod1 f) {
        return f.apply(actor, a[0]);
      } else if (fn instanceof ActorAsyncMethod2 f) {
        return f.apply(actor, a[0], a[1]);
      }
    }
    Object[] withReceiver = new Object[a.length + 1];
    withReceiver[0] = actor;
    System.arraycopy(a, 0, withReceiver, 1, a.length);
    return byHandle(method.invoker(), withReceiver);
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  static Object callTask(Object fn, MethodRef method, Object[] a) throws Throwable {
    if (fn != null) {
      if (fn instanceof TaskFunction0 f) {
        return f.apply();
      } else if (fn instanceof TaskFunction1 f) {
        return f.apply(a[0]);
      } else if (fn instanceof TaskFunction2 f) {
        return f.apply(a[0], a[1]);
      } else if (fn instanceof TaskFunction3 f) {
        return f.apply(a[0], a[1], a[2]);
      }
    }
    return byHandle(method.invoker(), a);
  }

  private static Object byHandle(MethodHandle mh, Object[] args) throws Throwable {
    return (Object) mh.invokeExact(args);
  }
}
