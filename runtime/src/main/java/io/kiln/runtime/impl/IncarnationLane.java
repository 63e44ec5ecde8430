package io.kiln.runtime.impl;

import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.ActorLane;
import io.kiln.runtime.ActorLane.NotRunException;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link ActorLane} of one incarnation of a serial worker actor: work goes straight onto the incarnation's
 * {@link ActorThreads} (one thread, so it runs between the mailbox's batches, never beside them), and the cell ends
 * the lane when the incarnation breaks ({@link #end}), failing the work still open.
 *
 * <p>Threading: {@link #submit} from any thread; {@link #end} on the cell's context; the work on the actor's thread.
 * Ending and submitting race benignly: a task is listed before {@link #ended} is read, and {@link #end} sets it before
 * it sweeps the list, so each open task is failed by one side or the other.
 */
final class IncarnationLane implements ActorLane {

  private static final Logger LOG = LoggerFactory.getLogger(ActorCell.class);

  private final ActorCell cell;
  private final int generation;
  private final ActorThreads threads;
  private final Set<Task<?>> open = ConcurrentHashMap.newKeySet();
  private volatile ActorDiedException ended;

  IncarnationLane(ActorCell cell, int generation, ActorThreads threads) {
    this.cell = cell;
    this.generation = generation;
    this.threads = threads;
  }

  @Override
  public <T> CompletableFuture<T> submit(Callable<T> work) {
    Task<T> task = new Task<>(work);
    open.add(task);
    ActorDiedException e = ended;
    if (e != null) {
      task.fail(new NotRunException(e));
      return task;
    }
    try {
      threads.execute(task);
    } catch (RejectedExecutionException closed) {
      task.fail(new NotRunException(ended != null ? ended : died("its threads have stopped")));
    }
    return task;
  }

  @Override
  public boolean live() {
    return ended == null;
  }

  /** The incarnation broke: open work fails, new work fails at once. On the cell's context. */
  void end(String cause) {
    ActorDiedException e = died(cause);
    ended = e;
    for (Task<?> t : open) {
      t.fail(t.begun ? e : new NotRunException(e)); // a task that began as this ran counts as run: no second run
    }
  }

  private ActorDiedException died(String cause) {
    return new ActorDiedException(cell.actorId, "actor " + cell.displayName() + ": the incarnation its lane work ran on"
        + " ended: " + cause);
  }

  private final class Task<T> extends CompletableFuture<T> implements Runnable {

    private final Callable<T> work;
    private volatile boolean begun;

    Task(Callable<T> work) {
      this.work = work;
    }

    void fail(Throwable e) {
      open.remove(this);
      completeExceptionally(e);
    }

    @Override
    public void run() {
      begun = true; // before reading ended: end() then either sees it begun or this sees the end
      ActorDiedException e = ended;
      if (e != null) {
        fail(new NotRunException(e)); // queued before its incarnation ended: never run on a retired instance
        return;
      }
      var previous = CurrentActor.set(cell.actorContext);
      T value;
      try {
        value = work.call();
      } catch (Throwable t) {
        fail(t);
        if (t instanceof Error fatal) {
          breakIncarnation(fatal);
        }
        return;
      } finally {
        CurrentActor.set(previous);
      }
      open.remove(this);
      complete(value);
    }
  }

  // As a fatal error in an actor method does (Mailbox.finished): the incarnation breaks, on the cell's context.
  private void breakIncarnation(Error fatal) {
    LOG.warn("actor {} ({}): fatal error in lane work: {}", cell.displayName(), cell.className(), fatal.toString());
    try {
      cell.context().runOnContext(v -> {
        if (cell.generation == generation) {
          cell.fail("fatal error in lane work: " + fatal, true);
        }
      });
    } catch (RejectedExecutionException closed) {
      // the node's Vert.x is closed: the incarnation goes with it
    }
  }
}
