package io.kiln.pools.impl;

/**
 * One-shot timers for the {@link PoolDispatcher} (its batch delay, its health probes, and the runtime's
 * {@link io.kiln.runtime.time.Deadlines} it keeps its requests' deadlines on, confined to its thread); on a Vert.x event loop, {@code setTimer} on the owning
 * context (milliseconds, at least 1: round the delay up, so that the task is not early). Tests use a
 * manual clock whose timers fire when the test advances time.
 *
 * <p>Contract for implementations:
 * <ol>
 *   <li>{@code task} runs on the dispatcher's thread, never concurrently with another dispatcher call,
 *       and not before {@code delayNanos} have passed on the dispatcher's clock (late is fine: the
 *       dispatcher re-checks the clock; early is tolerated, at the cost of a re-arm).</li>
 *   <li>{@link #schedule} never runs {@code task} synchronously, even for a delay of zero.</li>
 *   <li>{@link #cancel} after the task ran, or with an unknown id, does nothing.</li>
 *   <li>Neither method blocks.</li>
 * </ol>
 */
public interface Timers extends io.kiln.runtime.time.Timers {
}
