package io.kiln.gateway.impl;

import io.kiln.gateway.ReadinessHold;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The holds on one gateway's readiness. Readers (every readiness probe, every model lookup) only look at
 * a copy-on-write list, so an unheld gateway pays one volatile read per check. Thread-safe.
 */
public final class ReadinessHolds {

  private final CopyOnWriteArrayList<Hold> holds = new CopyOnWriteArrayList<>();

  public ReadinessHold hold(String reason) {
    Hold h = new Hold(Objects.requireNonNull(reason, "reason"));
    holds.add(h);
    return h;
  }

  boolean held() {
    return !holds.isEmpty();
  }

  /** The oldest hold's reason, or null when there is none. */
  String reason() {
    for (Hold h : holds) {
      return h.reason;
    }
    return null;
  }

  private final class Hold implements ReadinessHold {
    private final String reason;

    Hold(String reason) {
      this.reason = reason;
    }

    @Override
    public String reason() {
      return reason;
    }

    @Override
    public void release() {
      holds.remove(this);
    }
  }
}
