package io.kiln.runtime.time;

/**
 * One-shot timers for a {@link Deadlines#confined confined} deadline list: on a Vert.x event loop, {@code setTimer}
 * on the owning context (whole milliseconds, rounded up so that a task is not early); in tests, a manual clock
 * whose timers fire when the test advances time.
 *
 * <p>Contract for implementations:
 * <ol>
 *   <li>{@code task} runs on the owner's thread, never concurrently with another of the owner's calls, and not
 *       before {@code delayNanos} have passed on the owner's clock (late is fine: the list re-reads the clock;
 *       early is tolerated, at the cost of a re-arm).</li>
 *   <li>{@link #schedule} never runs {@code task} synchronously, even for a delay of zero.</li>
 *   <li>{@link #cancel} after the task ran, or with an unknown id, does nothing.</li>
 *   <li>Neither method blocks.</li>
 * </ol>
 */
public interface Timers {

  /** Schedules {@code task} once after {@code delayNanos} (&ge; 0); returns an id for {@link #cancel}. */
  long schedule(long delayNanos, Runnable task);

  /** Cancels a scheduled task if it has not run yet. */
  void cancel(long id);
}
