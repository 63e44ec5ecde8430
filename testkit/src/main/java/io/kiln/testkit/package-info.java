/**
 * What Kiln's tests share (the {@code kiln-testkit} module, a test-scope dependency of the other modules, never in
 * the distribution): {@link io.kiln.testkit.OipRequest} writes a well-formed OIP request in each of the protocol's
 * forms, {@link io.kiln.testkit.PromText} scrapes and reads {@code /metrics}, {@link io.kiln.testkit.Deployment}
 * writes the canonical deployment files. In-process clusters are {@code io.kiln.runtime.LocalCluster} (runtime), real
 * node processes deploy's {@code CliProcesses}; load goes through the loadtest module's generator. Of Kiln the kit
 * uses only the protocol module, so every module's tests can use it.
 */
package io.kiln.testkit;
