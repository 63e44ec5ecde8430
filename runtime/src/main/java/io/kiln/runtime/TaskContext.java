package io.kiln.runtime;

import java.util.List;

/**
 * Facts about the task running on the current thread: its id, the node it was placed on, the resources
 * reserved for it and that node's runtime. A task function is a static method, so this is how it finds
 * node-local state ({@link KilnRuntime#localService}) and learns where it ran (Ray's
 * {@code get_runtime_context().get_node_id()}). Obtain it with {@link #current()} on the thread that runs
 * the task; it is not propagated to other threads.
 */
public interface TaskContext {

  String taskId();

  /** The node the task runs on. */
  String nodeId();

  /** Resources reserved for the task while it runs, with GPU device indices. */
  Allocation allocation();

  default List<Integer> gpuIndices() {
    return allocation().gpuIndices();
  }

  /** The runtime of the node the task runs on. */
  KilnRuntime runtime();

  /**
   * The context of the task running on this thread.
   *
   * @throws IllegalStateException outside a task function
   */
  static TaskContext current() {
    TaskContext c = io.kiln.runtime.impl.CurrentTask.get();
    if (c == null) {
      throw new IllegalStateException("not inside a task function");
    }
    return c;
  }
}
