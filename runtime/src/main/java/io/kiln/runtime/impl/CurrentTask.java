package io.kiln.runtime.impl;

import io.kiln.runtime.Allocation;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.TaskContext;

/** Holds the context of the task running on the current thread; set by the node agent around each task. */
public final class CurrentTask {

  private static final ThreadLocal<TaskContext> CURRENT = new ThreadLocal<>();

  private CurrentTask() {
  }

  public static TaskContext get() {
    return CURRENT.get();
  }

  /** Installs {@code ctx} and returns the previous one, to restore after the task. */
  static TaskContext set(TaskContext ctx) {
    TaskContext prev = CURRENT.get();
    if (ctx == null) {
      CURRENT.remove();
    } else {
      CURRENT.set(ctx);
    }
    return prev;
  }

  record Context(String taskId, String nodeId, Allocation allocation, KilnRuntime runtime) implements TaskContext {
  }
}
