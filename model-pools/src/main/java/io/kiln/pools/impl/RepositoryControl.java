package io.kiln.pools.impl;

import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import io.kiln.runtime.Futures;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;

/**
 * A multiplexed {@link PoolDispatcher}'s explicit model control (the OIP repository extension's load and unload) and
 * the waiters of loads. Shares the dispatcher's thread, worker set and completion queue: every method runs on that
 * thread, and futures complete through the dispatcher's {@code run()} loop, as its requests' do.
 */
final class RepositoryControl {

  private final ModelAffinity affinity;
  private final WorkerSet workers;
  private final Executor executor;
  private final ArrayDeque<Runnable> completions;
  private final Runnable run;
  private final Map<String, CompletableFuture<Boolean>> waiting = new HashMap<>();

  RepositoryControl(ModelAffinity affinity, WorkerSet workers, Executor executor, ArrayDeque<Runnable> completions,
                    Runnable run) {
    this.affinity = affinity;
    this.workers = workers;
    this.executor = executor;
    this.completions = completions;
    this.run = run;
  }

  /**
   * Loads {@code model} onto a worker unless one holds it: an idle worker with the fewest models, else the live one
   * with the fewest (the load waits behind its batch). Requests for the model wait for this load. Completes with
   * whether a load ran; a load already running (explicit, or a request's miss) is joined. Fails with NOT_FOUND (not
   * in the repository), UNAVAILABLE (no worker, closed) or {@link CapacityExceededException} (as many loads run as
   * allowed), or the load's own failure (INTERNAL).
   */
  CompletionStage<Boolean> loadModel(String model, boolean closed) {
    if (affinity.repository().model(model).isEmpty()) {
      return CompletableFuture.failedFuture(InferenceException.notFound("model '" + model + "' is not in the repository"));
    }
    CompletableFuture<Boolean> running = waiting.get(model);
    if (running != null) {
      return running.minimalCompletionStage();
    }
    if (affinity.isLoading(model)) { // a request's miss loads it: wait for that load
      CompletableFuture<Boolean> f = new CompletableFuture<>();
      waiting.put(model, f);
      return f.minimalCompletionStage();
    }
    if (affinity.holderOf(model) != null) {
      return CompletableFuture.completedFuture(false);
    }
    if (closed) {
      return CompletableFuture.failedFuture(InferenceException.unavailable("pool is closed"));
    }
    List<String> idle = new ArrayList<>();
    workers.idle().forEach(w -> idle.add(w.id()));
    String target = affinity.leastLoaded(idle.isEmpty() ? workers.liveIds() : idle);
    if (target == null) {
      return CompletableFuture.failedFuture(InferenceException.unavailable("the pool has no live worker"));
    }
    if (affinity.loadingCount() >= affinity.repository().maxConcurrentLoads()) {
      return CompletableFuture.failedFuture(new CapacityExceededException(
          affinity.loadingCount() + " models are loading (max_concurrent_loads)", Duration.ofSeconds(1)));
    }
    WorkerSlot slot = workers.byId(target);
    affinity.loadSent(target, model);
    CompletableFuture<Boolean> done = new CompletableFuture<>();
    waiting.put(model, done);
    CompletionStage<Boolean> call;
    try {
      call = slot.channel.load(model);
    } catch (RuntimeException e) {
      call = CompletableFuture.failedFuture(e);
    }
    call.whenComplete((loaded, err) -> executor.execute(() -> {
      affinity.done(target, model, err == null);
      loadEnded(model, err == null ? null : Futures.unwrapCompletion(err));
      run.run();
    }));
    return done.minimalCompletionStage();
  }

  /** A load of {@code model} ended (failed when {@code failure} is not null): its waiters complete. */
  void loadEnded(String model, Throwable failure) {
    CompletableFuture<Boolean> w = waiting.remove(model);
    if (w != null) {
      completions.add(() -> {
        if (failure == null) {
          w.complete(true);
        } else {
          w.completeExceptionally(failure);
        }
      });
    }
  }

  /**
   * Closes {@code model} on every worker that holds it (after the batch each runs now); completes with how many did.
   * Requests for it that arrive later load it again.
   */
  CompletionStage<Integer> unloadModel(String model) {
    if (affinity.repository().model(model).isEmpty()) {
      return CompletableFuture.failedFuture(InferenceException.notFound("model '" + model + "' is not in the repository"));
    }
    List<CompletableFuture<Boolean>> calls = new ArrayList<>();
    for (String id : affinity.unload(model)) {
      WorkerSlot slot = workers.byId(id);
      if (slot != null) {
        calls.add(slot.channel.unload(model).toCompletableFuture().exceptionally(e -> false));
      }
    }
    return CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new))
        .thenApply(v -> (int) calls.stream().filter(CompletableFuture::join).count());
  }

  /** Each model's state: {@code READY} (a worker holds it), {@code LOADING} or {@code UNAVAILABLE} (not loaded). */
  Map<String, String> modelStates() {
    Map<String, String> out = new LinkedHashMap<>();
    for (String name : affinity.repository().names()) {
      out.put(name, affinity.isLoading(name) ? "LOADING" : affinity.isLoaded(name) ? "READY" : "UNAVAILABLE");
    }
    return out;
  }
}
