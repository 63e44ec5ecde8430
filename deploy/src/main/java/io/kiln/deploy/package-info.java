/**
 * The {@code kiln} command (picocli): {@code up}, {@code start}, {@code deploy}, {@code status},
 * {@code delete}, {@code stop}; plus example deployments, start scripts and cluster manifests.
 */
package io.kiln.deploy;
