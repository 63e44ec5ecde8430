package io.kiln.pools;

/**
 * One worker of a pool as its manager sees it.
 *
 * @param index the worker's index in the pool
 * @param name its actor name
 * @param actorId its actor id, or null before it was created; stable across restarts (and adoption)
 * @param state where it is in its life
 * @param busy whether it is executing a batch
 * @param restarts how often it was restarted (its model reloaded)
 * @param loadInfo how its model was loaded, or null before it answered once
 * @param lastError the last failure seen (creation, a failed batch, a restart), or null
 */
public record WorkerStatus(int index, String name, String actorId, WorkerState state, boolean busy, int restarts,
                           ModelLoadInfo loadInfo, String lastError) {
}
