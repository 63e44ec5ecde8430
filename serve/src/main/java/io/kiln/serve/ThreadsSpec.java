package io.kiln.serve;

import io.kiln.serve.impl.Rules;

/**
 * PyTorch thread pools of one worker. Several workers on one node each get their own pools, so the
 * product of workers and threads should not exceed the node's cores.
 *
 * @param intraOp threads inside one operator ({@code ai.djl.pytorch.num_threads}), at least 1
 * @param interOp threads across independent operators ({@code num_interop_threads}), at least 1
 */
public record ThreadsSpec(int intraOp, int interOp) {

  public static final int DEFAULT_INTRA_OP = 1;
  public static final int DEFAULT_INTER_OP = 1;
  /** Upper bound of either pool: more is a typo, not a configuration. */
  public static final int MAX_THREADS = 1024;

  public ThreadsSpec {
    Rules.require("intra_op", Rules.atLeast(intraOp, 1));
    Rules.require("intra_op", Rules.atMost(intraOp, MAX_THREADS));
    Rules.require("inter_op", Rules.atLeast(interOp, 1));
    Rules.require("inter_op", Rules.atMost(interOp, MAX_THREADS));
  }
}
