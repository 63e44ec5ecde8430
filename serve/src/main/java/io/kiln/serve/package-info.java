/**
 * Deployments declared in YAML: the schema and its validation (with line and column), the plan of
 * which pools go on which nodes, and the leader-elected controller that reconciles desired state kept
 * in Hazelcast against the running pools, including scaling and rolling updates.
 */
package io.kiln.serve;
