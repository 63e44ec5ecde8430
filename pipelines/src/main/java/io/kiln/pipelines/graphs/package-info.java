/**
 * Model graphs (Triton's ensembles, KServe's InferenceGraph): deployments called in order in one request, each step's
 * inputs mapped from the request's inputs or from named outputs of earlier steps, all steps on one node's warm pools,
 * each batched by its own pool. Declared in a deployment file's {@code graphs:} section (read by serve's
 * {@link io.kiln.serve.DeploymentLoader#readGraphs} into {@link io.kiln.serve.GraphSpec}s), applied with the file
 * ({@link io.kiln.pipelines.Applications}), served as one model over the Open Inference Protocol (the node's gateway
 * finds them through its model directory and sends to them through its pool port) and callable from a pipeline's
 * infer step ({@code infer: {graph: NAME}}). Entry point: {@link io.kiln.pipelines.graphs.Graphs}; docs/graphs.md.
 */
package io.kiln.pipelines.graphs;
