package io.kiln.pipelines.impl;

import io.kiln.pipelines.jobs.JobSpec;
import io.kiln.pipelines.jobs.JobStatus;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.SharedStore;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * Jobs in the cluster's stores, as JSON: specs (with their inputs, written once) in {@value #SPECS}, statuses
 * in {@value #STATUS} (written by the job's coordinator), cancel requests in {@value #CONTROL} (any node
 * writes; every node listens and the coordinator acts). Non-blocking; thread-safe.
 */
public final class JobStore {

  public static final String SPECS = "kiln.job-specs";
  public static final String STATUS = "kiln.jobs";
  public static final String CONTROL = "kiln.job-control";

  private final SharedStore<JobSpec> specs;
  private final SharedStore<JobStatus> status;
  private final SharedStore<String> control;

  public JobStore(KilnRuntime runtime) {
    this.specs = runtime.store(SPECS, JobSpec.class);
    this.status = runtime.store(STATUS, JobStatus.class);
    this.control = runtime.store(CONTROL, String.class);
  }

  public CompletionStage<Void> putSpec(String id, JobSpec spec) {
    return specs.put(id, spec);
  }

  public CompletionStage<Optional<JobSpec>> spec(String id) {
    return specs.get(id).thenApply(o -> o.map(SharedStore.Entry::value));
  }

  public CompletionStage<Void> put(JobStatus s) {
    return status.put(s.id(), s);
  }

  public CompletionStage<Optional<JobStatus>> get(String id) {
    return status.get(id).thenApply(o -> o.map(SharedStore.Entry::value));
  }

  /** Compare-and-set on a status entry (adopting a job whose coordinator left). */
  public CompletionStage<Optional<SharedStore.Entry<JobStatus>>> entry(String id) {
    return status.get(id);
  }

  public CompletionStage<Boolean> replace(SharedStore.Entry<JobStatus> old, JobStatus next) {
    return status.replace(old.key(), old, next);
  }

  public CompletionStage<List<JobStatus>> list() {
    return status.entries().thenApply(m -> m.values().stream().filter(SharedStore.Entry::readable)
        .map(SharedStore.Entry::value).sorted(Comparator.comparingLong(JobStatus::createdAtMs).reversed()).toList());
  }

  public CompletionStage<Void> requestCancel(String id) {
    return control.put(id, "cancel " + System.nanoTime()); // a new value each time, so listeners hear it
  }

  public String onControl(java.util.function.BiConsumer<String, String> listener) {
    return control.addListener((k, e) -> listener.accept(k, e == null || !e.readable() ? null : e.value()));
  }

  public void removeControlListener(String id) {
    control.removeListener(id);
  }
}
