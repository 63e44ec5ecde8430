/**
 * Placement of actors and tasks onto nodes: a pure function ({@link io.kiln.runtime.scheduling.Scheduler})
 * from a request and a {@link io.kiln.runtime.ClusterView} snapshot to a {@link
 * io.kiln.runtime.scheduling.Placement}. Reserving the resources is the chosen node's business (its
 * ledger may refuse); this package decides only where to ask.
 *
 * <p>Placement groups likewise: {@link io.kiln.runtime.scheduling.BundleScheduler#place} chooses a node for
 * every bundle of a group by its strategy (all or none) and
 * {@link io.kiln.runtime.scheduling.BundleScheduler#placeInBundle} routes an actor or task into a bundle; the
 * runtime then reserves the bundles with a two-phase prepare/commit on the chosen nodes' ledgers.
 */
package io.kiln.runtime.scheduling;
