/**
 * Pipelines with data locality: ordered steps declared in the deployment YAML ({@code pipelines:}), each a
 * runtime task with resources as per-node slots and a placement strategy, so that a step fetching a large
 * input to one node's disk ({@link NodeCache}) is followed by an inference step on <em>that</em> node's warm
 * pool ({@code same_node_as}), and a callback step runs where a resource pins it ({@code node_with_resource}).
 *
 * <p>Entry points: {@link Applications} (apply a deployment file: its deployments, model graphs and pipelines
 * validated together, stored together or not at all), {@link PipelineLoader} (YAML with line/column problems), {@link Pipelines} (start and
 * read runs from any node), {@link Step} (user steps), {@link NodeCache} and {@link CacheIndex} (the
 * node-local cache and the cluster-wide index behind {@code data_key} routing), and in
 * {@link io.kiln.pipelines.jobs} batch jobs: a deployment or a pipeline over a whole dataset, each input fetched
 * and analysed on one node, one atomically written result per input, resumable from its output folder; in
 * {@link io.kiln.pipelines.graphs} model graphs: deployments called in order in one request, served as one model.
 */
package io.kiln.pipelines;
