/**
 * The control plane's own implementation: the one way its APIs answer ({@link io.kiln.control.impl.Answers}), the
 * repository extension's operations, a run's event stream, and the dashboard's sampler, cluster series and state.
 * No other module uses it.
 */
package io.kiln.control.impl;
