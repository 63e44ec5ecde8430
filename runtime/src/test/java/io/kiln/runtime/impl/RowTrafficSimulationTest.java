package io.kiln.runtime.impl;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * Under a busy task load a node writes its row at most once per {@link NodeAgent#ROW_INTERVAL_MS}, whatever
 * the number of nodes: the table's write traffic grows linearly with the nodes, each node's with nothing.
 */
class RowTrafficSimulationTest {

  @Test
  void writesPerNodeAreBoundedByTheIntervalNotByTheLoad() {
    RowTrafficSimulation.Result small = RowTrafficSimulation.run(20, 3, 1);
    RowTrafficSimulation.Result large = RowTrafficSimulation.run(80, 3, 2);

    double bound = 1000.0 / NodeAgent.ROW_INTERVAL_MS;
    for (RowTrafficSimulation.Result r : new RowTrafficSimulation.Result[] {small, large}) {
      assertThat(r.changesPerNodeSecond()).as("the load changes the row hundreds of times a second")
          .isGreaterThan(300);
      assertThat(r.writesPerNodeSecond()).isLessThanOrEqualTo(bound + 1 / r.seconds()).isGreaterThan(bound * 0.9);
      assertThat(r.tasksRefused()).as("a full node refuses a few").isLessThan(r.changes() / 100);
    }
    // Per node, what is sent does not depend on the cluster's size; four times the nodes, four times the total.
    assertThat(large.outBytesPerNodeSecond()).isBetween(small.outBytesPerNodeSecond() * 0.95,
        small.outBytesPerNodeSecond() * 1.05);
    assertThat(large.bytesWritten()).isBetween(small.bytesWritten() * 38 / 10, small.bytesWritten() * 42 / 10);
  }
}
