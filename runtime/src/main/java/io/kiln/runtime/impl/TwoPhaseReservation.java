package io.kiln.runtime.impl;

import io.kiln.runtime.Futures;
import io.kiln.runtime.Resources;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Reserves a placement group's bundles on their nodes all or none: phase one prepares every bundle on its
 * node (the node's ledger takes the resources or refuses), phase two commits them once all are prepared. Any
 * prepare or commit failing cancels every bundle of the attempt (prepared, committed or unknown: a prepare
 * whose reply was lost may have succeeded), so no partial reservation is left behind; nodes also free
 * prepared bundles never committed ({@link BundleHost#PREPARE_TTL_MS}) in case the coordinator dies mid-way.
 */
final class TwoPhaseReservation {

  private TwoPhaseReservation() {
  }

  /** The node side, by message in the runtime, by direct call in tests. */
  interface Reserver {
    /** Completes when prepared; fails (e.g. {@link PlacementRefusedException}) when not. */
    CompletionStage<Void> prepare(String nodeId, BundleHost.Key key, String attempt, Resources resources);

    CompletionStage<Void> commit(String nodeId, BundleHost.Key key, String attempt);

    /** Frees the bundle if held under {@code attempt}; idempotent, succeeds when there was nothing. */
    CompletionStage<Void> cancel(String nodeId, BundleHost.Key key, String attempt);
  }

  /** One bundle to reserve. */
  record Part(BundleHost.Key key, String nodeId, String attempt, Resources resources) {
  }

  /** @param reason the first failure when not reserved, else null */
  record Outcome(boolean reserved, String reason) {
  }

  /** Completes (never fails) once every part is committed, or once every part is cancelled after a failure. */
  static CompletionStage<Outcome> reserve(List<Part> parts, Reserver reserver) {
    List<CompletableFuture<Void>> prepared = new ArrayList<>();
    for (Part p : parts) {
      prepared.add(safely(() -> reserver.prepare(p.nodeId(), p.key(), p.attempt(), p.resources())));
    }
    return settled(prepared).thenCompose(prepareFailure -> {
      if (prepareFailure != null) {
        return cancelAll(parts, reserver).thenApply(v -> new Outcome(false, prepareFailure));
      }
      List<CompletableFuture<Void>> committed = new ArrayList<>();
      for (Part p : parts) {
        committed.add(safely(() -> reserver.commit(p.nodeId(), p.key(), p.attempt())));
      }
      return settled(committed).thenCompose(commitFailure -> commitFailure == null
          ? CompletableFuture.completedFuture(new Outcome(true, null))
          : cancelAll(parts, reserver).thenApply(v -> new Outcome(false, commitFailure)));
    });
  }

  static CompletionStage<Void> cancelAll(List<Part> parts, Reserver reserver) {
    List<CompletableFuture<Void>> cancels = new ArrayList<>();
    for (Part p : parts) {
      cancels.add(safely(() -> reserver.cancel(p.nodeId(), p.key(), p.attempt())));
    }
    return settled(cancels).thenApply(x -> null);
  }

  /** Waits for all; the first failure's message (in part order), or null when all succeeded. */
  private static CompletionStage<String> settled(List<CompletableFuture<Void>> all) {
    CompletableFuture<?>[] each = all.stream().map(f -> f.handle((v, e) -> null)).toArray(CompletableFuture[]::new);
    return CompletableFuture.allOf(each).thenApply(v -> {
      for (CompletableFuture<Void> f : all) {
        if (f.isCompletedExceptionally()) {
          Throwable t = Futures.unwrap(f.handle((x, e) -> e).join());
          return t.getMessage() == null ? t.toString() : t.getMessage();
        }
      }
      return null;
    });
  }

  private static CompletableFuture<Void> safely(java.util.function.Supplier<CompletionStage<Void>> call) {
    try {
      return call.get().toCompletableFuture();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** The reserved parts as a map for writing the group's row. */
  static Map<Integer, String> nodesOf(List<Part> parts) {
    Map<Integer, String> out = new java.util.HashMap<>();
    parts.forEach(p -> out.put(p.key().index(), p.nodeId()));
    return out;
  }
}
