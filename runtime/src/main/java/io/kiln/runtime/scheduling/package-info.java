/**
 * Placement of actors and tasks onto nodes: a pure function ({@link io.kiln.runtime.scheduling.Scheduler})
 * from a request and a {@link io.kiln.runtime.ClusterView} snapshot to a {@link
 * io.kiln.runtime.scheduling.Placement}. Reserving the resources is the chosen node's business (its
 * ledger may refuse); this package decides only where to ask.
 */
package io.kiln.runtime.scheduling;
