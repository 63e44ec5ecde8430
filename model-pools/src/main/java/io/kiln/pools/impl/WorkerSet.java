package io.kiln.pools.impl;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The pool's workers by state. Idle ones form a LIFO stack (see {@link PoolDispatcher} for why); busy
 * ones include any removed mid-batch, which are forgotten when their batch ends; failed ones stay,
 * out of rotation, until the manager replaces or removes them. Not thread-safe.
 */
final class WorkerSet {

  private final Map<String, WorkerSlot> byId = new HashMap<>();
  private final ArrayDeque<WorkerSlot> idle = new ArrayDeque<>();
  private final Set<WorkerSlot> busy = new LinkedHashSet<>();
  private int failed;

  /** @throws IllegalStateException if a worker of that id is present and has not failed */
  void add(WorkerChannel channel) {
    WorkerSlot old = byId.get(channel.id());
    if (old != null) {
      if (old.state != WorkerSlot.State.FAILED) {
        throw new IllegalStateException("worker '" + channel.id() + "' is already in the pool");
      }
      failed--;
    }
    WorkerSlot slot = new WorkerSlot(channel);
    byId.put(channel.id(), slot);
    idle.push(slot);
  }

  void remove(String id) {
    WorkerSlot slot = byId.remove(id);
    if (slot != null) {
      switch (slot.state) {
        case IDLE -> idle.remove(slot);
        case FAILED -> failed--;
        case BUSY -> slot.removed = true;
      }
    }
  }

  boolean hasIdle() {
    return !idle.isEmpty();
  }

  /** Pops the most recently idle worker and marks it busy with {@code batch}. */
  WorkerSlot takeIdle(List<PendingRequest> batch, long nowNanos) {
    WorkerSlot slot = idle.pop();
    slot.state = WorkerSlot.State.BUSY;
    slot.batch = batch;
    slot.dispatchedNanos = nowNanos;
    busy.add(slot);
    return slot;
  }

  /** Marks the idle {@code slot} busy with {@code batch} (a multiplexed pool picks the worker by its models). */
  WorkerSlot takeIdle(WorkerSlot slot, List<PendingRequest> batch, long nowNanos) {
    if (!idle.remove(slot)) {
      throw new IllegalStateException("worker '" + slot.id() + "' is not idle");
    }
    slot.state = WorkerSlot.State.BUSY;
    slot.batch = batch;
    slot.dispatchedNanos = nowNanos;
    busy.add(slot);
    return slot;
  }

  /** The idle workers, most recently used first. */
  Iterable<WorkerSlot> idle() {
    return idle;
  }

  /** The workers executing a batch. */
  Iterable<WorkerSlot> busy() {
    return busy;
  }

  /** The idle worker of id {@code id}, or null. */
  WorkerSlot idleById(String id) {
    WorkerSlot s = byId.get(id);
    return s != null && s.state == WorkerSlot.State.IDLE ? s : null;
  }

  /** The ids of workers in rotation (idle or busy, not failed). */
  java.util.List<String> liveIds() {
    java.util.List<String> out = new java.util.ArrayList<>();
    byId.forEach((id, s) -> {
      if (s.state != WorkerSlot.State.FAILED) {
        out.add(id);
      }
    });
    return out;
  }

  WorkerSlot byId(String id) {
    return byId.get(id);
  }

  /** Ends {@code slot}'s batch; false if it was not executing {@code batch} (the set was cleared since). */
  boolean finishBatch(WorkerSlot slot, List<PendingRequest> batch) {
    if (slot.batch != batch || !busy.remove(slot)) {
      return false;
    }
    slot.batch = null;
    return true;
  }

  void makeIdle(WorkerSlot slot) {
    if (!slot.removed) {
      slot.state = WorkerSlot.State.IDLE;
      idle.push(slot);
    }
  }

  /** Takes a worker whose batch failed out of rotation; false if it had been removed anyway. */
  boolean makeFailed(WorkerSlot slot) {
    if (slot.removed) {
      return false;
    }
    slot.state = WorkerSlot.State.FAILED;
    failed++;
    return true;
  }

  /** Forgets every worker; returns those that were executing a batch. */
  List<WorkerSlot> clear() {
    List<WorkerSlot> wereBusy = new ArrayList<>(busy);
    byId.clear();
    idle.clear();
    busy.clear();
    failed = 0;
    return wereBusy;
  }

  int idleCount() {
    return idle.size();
  }

  int busyCount() {
    return busy.size();
  }

  int totalCount() {
    return idle.size() + busy.size() + failed;
  }
}
