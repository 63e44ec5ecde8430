package io.kiln.runtime.impl;

import io.kiln.runtime.spi.cluster.SharedMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * The cluster's placement-group table ({@link GroupRecord#MAP}) and name index ({@link GroupRecord#NAMES}),
 * with a local copy of every row kept current by the map's change events and by this node's own writes, so
 * placement into a bundle is answered locally. Groups are few (one per gang of actors), so every node keeps
 * all of them. A row is taken into the copy only if it is not older than the one there (events and own
 * writes can cross). Thread-safe.
 */
final class PlacementGroupTable {

  /** A row and its exact stored JSON, which compare-and-set writes name as the expected value. */
  record Row(GroupRecord rec, String json) {
  }

  private record Waiter(Predicate<GroupRecord> until, CompletableFuture<Optional<GroupRecord>> future) {
  }

  private final SharedMap map;
  private final SharedMap names;
  private final Map<String, Row> rows = new ConcurrentHashMap<>();
  private final Map<String, List<Waiter>> waiters = new ConcurrentHashMap<>();
  private final List<Consumer<String>> listeners = new CopyOnWriteArrayList<>();

  PlacementGroupTable(SharedMap map, SharedMap names) {
    this.map = map;
    this.names = names;
    map.addListener(this::changed);
  }

  /** Reads every row (at start; later rows arrive as events). */
  CompletionStage<Void> load() {
    return map.entries().thenAccept(all -> all.forEach(this::changed));
  }

  /** Tells {@code listener} the id of every group whose row changed or went (off the caller's thread). */
  void onChange(Consumer<String> listener) {
    listeners.add(listener);
  }

  Optional<Row> row(String groupId) {
    return Optional.ofNullable(rows.get(groupId));
  }

  List<Row> rows() {
    return new ArrayList<>(rows.values());
  }

  /** The row as stored now (not the local copy), taken into the copy. */
  CompletionStage<Optional<Row>> fetch(String groupId) {
    return map.get(groupId).thenApply(v -> {
      changed(groupId, v.orElse(null));
      return v.map(json -> new Row(GroupRecord.decode(json), json));
    });
  }

  /** Claims the name (if any) and writes the row; false if the name is taken. */
  CompletionStage<Boolean> create(GroupRecord rec) {
    String json = rec.encode();
    CompletionStage<Boolean> claimed = rec.name() == null ? CompletableFuture.completedFuture(true)
        : names.putIfAbsent(GroupRecord.nameKey(rec.namespace(), rec.name()), rec.groupId()).thenApply(Optional::isEmpty);
    return claimed.thenCompose(ok -> !ok ? CompletableFuture.completedFuture(false)
        : map.put(rec.groupId(), json).thenApply(v -> {
          changed(rec.groupId(), json);
          return true;
        }));
  }

  CompletionStage<Optional<String>> idOfName(String namespace, String name) {
    return names.get(GroupRecord.nameKey(namespace, name));
  }

  /** Compare-and-set of a row; the new row on success, empty if the row had changed. */
  CompletionStage<Optional<Row>> replace(Row expected, GroupRecord update) {
    String json = update.encode();
    return map.replace(expected.rec().groupId(), expected.json(), json).thenApply(ok -> {
      if (!ok) {
        return Optional.empty();
      }
      changed(update.groupId(), json);
      return Optional.of(new Row(update, json));
    });
  }

  /** Deletes the row (if still {@code expected}) and frees its name. */
  CompletionStage<Boolean> delete(Row expected) {
    GroupRecord rec = expected.rec();
    return map.remove(rec.groupId(), expected.json()).thenCompose(ok -> {
      if (ok) {
        changed(rec.groupId(), null);
      }
      return !ok || rec.name() == null ? CompletableFuture.completedFuture(ok)
          : names.remove(GroupRecord.nameKey(rec.namespace(), rec.name()), rec.groupId()).thenApply(x -> true);
    });
  }

  /** Completes with the row once {@code until} holds for it, or empty once the row is gone. */
  CompletionStage<Optional<GroupRecord>> await(String groupId, Predicate<GroupRecord> until) {
    CompletableFuture<Optional<GroupRecord>> f = new CompletableFuture<>();
    Waiter w = new Waiter(until, f);
    waiters.computeIfAbsent(groupId, k -> new CopyOnWriteArrayList<>()).add(w);
    f.whenComplete((r, e) -> {
      List<Waiter> list = waiters.get(groupId);
      if (list != null) {
        list.remove(w);
      }
    });
    // Registered before reading, so a change between the read and the registration is not missed.
    fetch(groupId).whenComplete((row, err) -> {
      if (err != null) {
        f.completeExceptionally(err);
      } else {
        offer(w, row.map(Row::rec).orElse(null));
      }
    });
    return f;
  }

  private void changed(String groupId, String json) {
    GroupRecord rec = json == null ? null : GroupRecord.decode(json);
    if (rec == null) {
      rows.remove(groupId);
    } else {
      Row[] taken = new Row[1];
      rows.compute(groupId, (k, old) -> {
        if (old != null && old.rec().version() > rec.version()) {
          return old;
        }
        taken[0] = new Row(rec, json);
        return taken[0];
      });
      if (taken[0] == null) {
        return;
      }
    }
    List<Waiter> list = waiters.get(groupId);
    if (list != null) {
      list.forEach(w -> offer(w, rec));
    }
    listeners.forEach(l -> l.accept(groupId));
  }

  private static void offer(Waiter w, GroupRecord rec) {
    if (rec == null) {
      w.future.complete(Optional.empty());
    } else if (w.until.test(rec)) {
      w.future.complete(Optional.of(rec));
    }
  }
}
