/**
 * Implementation of deployment loading and planning: composing YAML (SnakeYAML) and JSON (Jackson) into
 * one positioned node tree ({@link io.kiln.serve.yaml.YamlDocuments}, {@link io.kiln.serve.impl.JsonDocuments}),
 * the typed reader that walks it collecting problems ({@link io.kiln.serve.yaml.Reading},
 * {@link io.kiln.serve.yaml.MappingReader}, {@link io.kiln.serve.impl.SpecReader} and its section readers),
 * the value rules shared with the records ({@link io.kiln.serve.impl.Rules}), and the renderers of specs and
 * plans; and the controller behind {@link io.kiln.serve.ServeController}: the desired state in the cluster's
 * shared maps ({@link io.kiln.serve.impl.DesiredState}), the leader's reconcile loop
 * ({@link io.kiln.serve.impl.ControllerLoop}) and its passes (Reconciler, with Rollout deciding the serving
 * version, PoolActions and PoolCreator acting on pools, HealthReports, {@link io.kiln.serve.impl.Autoscaler}).
 * Not an API: other modules use {@code io.kiln.serve}.
 */
package io.kiln.serve.impl;
