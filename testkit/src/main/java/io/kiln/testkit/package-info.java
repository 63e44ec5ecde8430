/**
 * What Kiln's tests share (the {@code kiln-testkit} module, a test-scope dependency of the other modules, never in
 * the distribution): {@link io.kiln.testkit.OipRequest} writes a well-formed OIP request in each of the protocol's
 * forms, {@link io.kiln.testkit.PromText} scrapes and reads {@code /metrics}, {@link io.kiln.testkit.Deployment}
 * writes the canonical deployment files, {@link io.kiln.testkit.KilnProcess} starts and owns a node process (a JVM on
 * the test class path, {@code java -jar} of the distribution, the {@code ./kiln} launcher): its log, the waits that
 * fail at once with the log's tail when it dies, its stop; {@link io.kiln.testkit.FreePorts} picks distinct free ports
 * for it. In-process clusters are {@code io.kiln.runtime.LocalCluster}
 * (runtime); deploy's {@code CliProcesses} runs the {@code kiln} command through {@code KilnProcess} and reads the
 * nodes' {@code .kiln/nodes} records, runtime's {@code NodeProcesses} its bare cluster nodes; load goes through the
 * loadtest module's generator. Of Kiln the kit uses only the protocol module, so every module's tests can use it.
 */
package io.kiln.testkit;
