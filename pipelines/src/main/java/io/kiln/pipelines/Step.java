package io.kiln.pipelines;

import java.util.Map;

/**
 * A user step: a class on every node's classpath or in a jar of its steps folder
 * ({@link PipelineOptions#stepsDir()}), named in YAML ({@code class: com.example.Describe}),
 * instantiated by its public no-argument constructor on the node the step was placed on, once per attempt.
 *
 * <p><b>Threading:</b> {@link #run} is called on a worker thread of the runtime's task pool and may block
 * (read files, call services); it must not keep state between runs. <b>Retries</b> are only correct when
 * the step is deterministic and its writes are idempotent: a step may run again after a failure or a node
 * loss. <b>Errors:</b> an exception fails the attempt; its message is recorded as the step's error.
 */
@FunctionalInterface
public interface Step {

  /**
   * Runs the step.
   *
   * @return the step's result: JSON-like values only (strings, numbers, booleans, lists and maps of
   *     them), encoded when it crosses nodes and kept in the run's status, so keep it small
   */
  Map<String, Object> run(StepContext context) throws Exception;
}
