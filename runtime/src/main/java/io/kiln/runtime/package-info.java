/**
 * Kiln's actor runtime: actors, tasks, futures, resources and scheduling strategies with Ray's
 * semantics, hosted on Vert.x contexts. Named actors live in a registry and nodes in a node table behind
 * the cluster SPI ({@code io.kiln.runtime.spi.cluster}); Hazelcast is the clustered implementation and
 * an in-memory one serves single-node runs and fast tests. Calls are event-bus messages: by reference on
 * one node, through an explicit CBOR codec across nodes.
 *
 * <p>Placement groups ({@link io.kiln.runtime.PlacementGroup}, Ray's gang reservation) reserve bundles of
 * resources on several nodes at once, all or none, by PACK, STRICT_PACK, SPREAD or STRICT_SPREAD; actors and
 * tasks placed into a bundle ({@link io.kiln.runtime.SchedulingStrategy#placementGroup}) pay from it. Groups
 * live in the cluster table {@code kiln.placement-groups}; the leader places, reschedules and fails them.
 *
 * <h2>One async type per layer</h2>
 *
 * <p>Every module of Kiln follows this rule:
 * <ol>
 *   <li>Every public API that another module calls returns (and takes) {@link java.util.concurrent.CompletionStage}.
 *       Not a Vert.x {@code Future}, and not {@code CompletableFuture} unless the caller must complete or
 *       cancel it.</li>
 *   <li>A Vert.x {@code io.vertx.core.Future} is used only inside code that faces Vert.x: gateway handlers,
 *       verticles, the runtime's implementation where it talks to the event bus.</li>
 *   <li>The conversion happens once, at that boundary ({@code future.toCompletionStage()} on the way out,
 *       {@code Future.fromCompletionStage(stage)} on the way in). Never back and forth in one chain. Never
 *       {@code toCompletableFuture()} only to call {@code thenApply}, {@code whenComplete} and the like, which
 *       {@code CompletionStage} already has.</li>
 *   <li>{@code toCompletableFuture()} stays where a {@code CompletableFuture} method is really needed:
 *       {@code join()} in mains, in {@code close()} and in tests, or {@code isDone()}, {@code completeOnTimeout}.
 *       To wait for many stages use {@link io.kiln.runtime.Futures#allOf} or {@link io.kiln.runtime.Futures#all}.</li>
 *   <li>To get at the real failure behind {@code CompletionException} and {@code ExecutionException}
 *       wrappers, use {@link io.kiln.runtime.Futures#unwrap}. Do not write a private copy.</li>
 * </ol>
 */
package io.kiln.runtime;
