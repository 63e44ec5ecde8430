package io.kiln.loadtest;

/**
 * Makes the requests of a run when a fixed {@link RequestMix} is not enough: request {@code index} (0, 1, 2, ... in
 * the order they are sent) may carry values of its own that a {@link ResponseCheck} then expects back. Called on the
 * generator's event loops, from several at once: it must be quick and must not block.
 */
@FunctionalInterface
public interface RequestSource {

  HttpCall request(long index);
}
