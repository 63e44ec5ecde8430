package io.kiln.pools;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A request's cancellation token, carried in its {@link RequestContext}: whoever made the request cancels it (the
 * gateway's exchange when its client goes away, a job's batch when it stops waiting), and every layer holding the
 * request listens ({@link #onCancel}): the {@link PoolClient} withdraws it from its pool, the pool unqueues it (a
 * request cancelled while queued never reaches a worker and counts as cancelled, not as an error of the model),
 * and a running one's result is dropped. It is the one way to withdraw a request.
 *
 * <p>{@link #NONE} is the shared token of a request nobody will cancel: it allocates nothing and ignores listeners.
 * The class is open so that an object made per request anyway may be its request's token (the gateway's exchange
 * is), which saves the token's allocation on the hot path.
 *
 * <p>Thread-safe: {@link #cancel} may come from any thread; each listener runs exactly once, on the cancelling
 * thread, or at once on the registering thread when the token was cancelled already. Listeners must not block.
 */
public class Cancellation {

  /** The token of a request that is never cancelled: {@link #cancel} does nothing, listeners are dropped. */
  public static final Cancellation NONE = new Cancellation(false);

  private final boolean cancellable;
  /** Set once, under the lock; read without it. */
  private volatile String reason;
  /** Guarded by this: null, one Runnable, or a List of them (most tokens have one listener: no list). */
  private Object listeners;

  /** A token that can be cancelled (subclasses: an object that is its request's token). */
  protected Cancellation() {
    this(true);
  }

  private Cancellation(boolean cancellable) {
    this.cancellable = cancellable;
  }

  /** A fresh token that can be cancelled. */
  public static Cancellation create() {
    return new Cancellation();
  }

  /**
   * Cancels the request, running every listener registered so far on this thread (a listener that throws does not
   * stop the others). Idempotent: only the first call counts.
   *
   * @param reason why, for the error its request fails with (e.g. "client went away")
   * @return whether this call cancelled it (false: cancelled before, or {@link #NONE})
   */
  public final boolean cancel(String reason) {
    Objects.requireNonNull(reason, "reason");
    if (!cancellable) {
      return false;
    }
    Object toRun;
    synchronized (this) {
      if (this.reason != null) {
        return false;
      }
      this.reason = reason;
      toRun = listeners;
      listeners = null;
    }
    if (toRun instanceof Runnable r) {
      runListener(r);
    } else if (toRun != null) {
      @SuppressWarnings("unchecked")
      List<Runnable> all = (List<Runnable>) toRun;
      all.forEach(Cancellation::runListener);
    }
    return true;
  }

  /** Whether it was cancelled. */
  public final boolean isCancelled() {
    return reason != null;
  }

  /** Why it was cancelled; null while it is not. */
  public final String reason() {
    return reason;
  }

  /** Whether {@link #cancel} can ever take effect (false only for {@link #NONE}). */
  public final boolean cancellable() {
    return cancellable;
  }

  /**
   * Runs {@code listener} once when the request is cancelled: at once, here, if it was already; never for
   * {@link #NONE}. Registering costs no allocation for the first listener.
   */
  public final void onCancel(Runnable listener) {
    Objects.requireNonNull(listener, "listener");
    if (!cancellable) {
      return;
    }
    synchronized (this) {
      if (reason == null) {
        if (listeners == null) {
          listeners = listener;
        } else if (listeners instanceof Runnable first) {
          List<Runnable> all = new ArrayList<>(2);
          all.add(first);
          all.add(listener);
          listeners = all;
        } else {
          @SuppressWarnings("unchecked")
          List<Runnable> all = (List<Runnable>) listeners;
          all.add(listener);
        }
        return;
      }
    }
    runListener(listener);
  }

  private static void runListener(Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      org.slf4j.LoggerFactory.getLogger(Cancellation.class).warn("a cancellation listener failed", e);
    }
  }

  @Override
  public String toString() {
    return !cancellable ? "Cancellation.NONE" : reason == null ? "Cancellation[live]" : "Cancellation[" + reason + "]";
  }
}
