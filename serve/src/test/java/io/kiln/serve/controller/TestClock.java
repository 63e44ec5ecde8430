package io.kiln.serve.controller;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Wall-clock milliseconds plus an offset the test moves forward: time passes as usual (drain graces end on
 * their own), and jumps when a test wants a delay (autoscaling, health periods) over at once.
 */
final class TestClock implements LongSupplier {

  private final AtomicLong offset = new AtomicLong();

  @Override
  public long getAsLong() {
    return System.currentTimeMillis() + offset.get();
  }

  void advance(Duration d) {
    offset.addAndGet(d.toMillis());
  }
}
