package io.kiln.pools;

/** Where a pool's worker is in its life, as its manager sees it. */
public enum WorkerState {
  /** Being created (or adopted): placed, loading and warming its model. */
  STARTING,
  /** Serving: in the pool's rotation, idle or executing a batch. */
  READY,
  /** Failed under a batch and out of rotation; being restarted, which reloads its model. */
  RESTARTING,
  /** Taken out by a scale-down or a drain: finishing its batch, then killed. */
  STOPPING,
  /** Gone for good: creation failed, or it failed with no restarts left. Kept for the status page. */
  DEAD
}
