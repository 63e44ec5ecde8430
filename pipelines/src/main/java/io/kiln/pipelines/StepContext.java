package io.kiln.pipelines;

import io.kiln.runtime.KilnRuntime;
import java.util.Map;
import java.util.Optional;

/**
 * What a running step can see: the run's input and its own parameters, the results of the steps before
 * it, the node it runs on with that node's cache, and the node's runtime. Valid during
 * {@link Step#run}; thread-confined to the thread running it.
 */
public interface StepContext {

  String runId();

  String pipeline();

  /** This step's name. */
  String step();

  /** 1-based attempt of this step in the current pass of the run. */
  int attempt();

  /** The node this step runs on. */
  String nodeId();

  /** The run's input. */
  Map<String, String> input();

  /** This step's parameters ({@code params:} of a class step), placeholders filled. */
  Map<String, String> params();

  /** The result of an earlier step of this run, if it succeeded. */
  Optional<StepResult> result(String step);

  /** This node's cache, where fetch steps put their inputs. */
  NodeCache cache();

  /** This node's runtime, e.g. for {@link KilnRuntime#localService}. */
  KilnRuntime runtime();

  /** Publishes a progress event ({@code step_progress}) for this step, from this node. */
  void progress(String message);
}
