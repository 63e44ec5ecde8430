package io.kiln.pipelines.impl;

import java.util.concurrent.Semaphore;

/**
 * A node's fetch slots for job inputs, registered as the node's local service: at most {@code permits}
 * job inputs are being downloaded on the node at once, whichever jobs they belong to; analysis does not
 * hold a slot. Sized by the node's {@code fetch_slot} resource (default {@value #DEFAULT_SLOTS}).
 */
public record JobSlots(Semaphore fetch, int permits) {

  public static final int DEFAULT_SLOTS = 4;

  public static JobSlots of(int permits) {
    int n = Math.max(1, permits);
    return new JobSlots(new Semaphore(n, true), n);
  }
}
