package io.kiln.pipelines.impl;

import java.util.List;
import java.util.Map;

/**
 * What a job input's task answers: where the input was fetched and analysed, and the model's outputs.
 *
 * @param index the input's place in the job
 * @param fetchNode the node whose cache holds the input (the task's node)
 * @param inferNode the node whose pool answered (the pool reports it)
 * @param cached whether the input was in the node's cache before the task
 */
public record JobOutcome(int index, String key, String uri, String fetchNode, String inferNode, String sha256,
                         long bytes, boolean cached, long fetchMs, long inferMs, List<Map<String, Object>> outputs) {

  public JobOutcome {
    outputs = List.copyOf(outputs);
  }

  /** One input of a batch that failed: {@code message} starts with its cause, as {@link JobTasks}' do. */
  public record Failure(int index, String message) {
  }

  /** A batch's answer: every input either done or failed. */
  public record Batch(List<JobOutcome> done, List<Failure> failed) {

    public Batch {
      done = List.copyOf(done);
      failed = List.copyOf(failed);
    }
  }
}
