/**
 * Kiln's actor runtime: actors, tasks, futures, resources and scheduling strategies with Ray's
 * semantics, hosted on Vert.x contexts. Named actors live in a registry and nodes in a node table behind
 * the cluster SPI ({@code io.kiln.runtime.spi.cluster}); Hazelcast is the clustered implementation and
 * an in-memory one serves single-node runs and fast tests. Calls are event-bus messages: by reference on
 * one node, through an explicit CBOR codec across nodes.
 */
package io.kiln.runtime;
