package io.kiln.gateway.impl;

import io.kiln.gateway.ReadinessHold;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The holds on one gateway's readiness. Readers (every readiness probe, every model lookup) only look at
 * a copy-on-write list, so an unheld gateway pays one volatile read per check. A hold taken for the server
 * only (a draining node) leaves the models ready and serving. Thread-safe.
 */
public final class ReadinessHolds {

  private final CopyOnWriteArrayList<Hold> holds = new CopyOnWriteArrayList<>();

  public ReadinessHold hold(String reason) {
    return hold(reason, true);
  }

  /** @param models whether the models read not ready too (and refuse inference), or only the server */
  public ReadinessHold hold(String reason, boolean models) {
    Hold h = new Hold(Objects.requireNonNull(reason, "reason"), models);
    holds.add(h);
    return h;
  }

  /** Whether the server is held not ready. */
  boolean held() {
    return !holds.isEmpty();
  }

  /** Whether a hold on the server only is in place: its node drains to leave. */
  boolean draining() {
    for (Hold h : holds) {
      if (!h.models) {
        return true;
      }
    }
    return false;
  }

  /** Whether the models are held not ready too. */
  boolean modelsHeld() {
    for (Hold h : holds) {
      if (h.models) {
        return true;
      }
    }
    return false;
  }

  /** The oldest reason of a hold on the models, or null when there is none. */
  String modelsReason() {
    for (Hold h : holds) {
      if (h.models) {
        return h.reason;
      }
    }
    return null;
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
    private final boolean models;

    Hold(String reason, boolean models) {
      this.reason = reason;
      this.models = models;
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
