package io.kiln.pipelines;

/**
 * How many attempts of one step (by name, across pipelines) this node ran: running now, the most at once,
 * and in total since the node started. With a slot resource such as {@code fetch_slot: 2} per node,
 * {@code peak} never exceeds 2.
 */
public record StepLoad(String step, int running, int peak, long total) {
}
