/**
 * Batch jobs over datasets with data locality: {@link io.kiln.pipelines.jobs.JobLoader} reads a job file
 * (line/column problems, nothing started when invalid), {@link io.kiln.pipelines.jobs.Jobs} runs jobs on a
 * node and reads them from any node, {@link io.kiln.pipelines.jobs.JobStatus} is what a person watches.
 *
 * <p>Guarantees: each input is fetched and analysed on one node (a runtime task pinned there, one per batch of
 * inputs; an input a node caches goes to it); its result is written atomically under the SHA-256 of its URI,
 * forced to disk before it counts as done, so retries and re-runs replace a result with an equal one and never
 * add a second; a job resumed, re-submitted or adopted
 * by the leader redoes only inputs without a result; a job holds at most {@code max_in_flight} inputs
 * (at most {@code per_node} on a node), and with priority {@code low} fewer where the pool serves online
 * requests.
 */
package io.kiln.pipelines.jobs;
