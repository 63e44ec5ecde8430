/**
 * A request's logs and traces across the request path: {@link io.kiln.pools.trace.TraceParent} (W3C Trace Context,
 * checked; a malformed header is ignored and starts a new trace), {@link io.kiln.pools.trace.RequestTrace} (what a
 * request carries from the gateway to its pool and worker), {@link io.kiln.pools.trace.Spans} (the node's span
 * export, off unless configured) and {@link io.kiln.pools.trace.RequestLog} (the request id and trace id on the log
 * lines about a request).
 */
package io.kiln.pools.trace;
