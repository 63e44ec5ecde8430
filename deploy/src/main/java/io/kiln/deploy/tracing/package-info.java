/**
 * Span export with the OpenTelemetry SDK when {@code --otel-endpoint} (or {@code OTEL_EXPORTER_OTLP_ENDPOINT}) is
 * set: {@link io.kiln.deploy.tracing.OtelSpans} is the node's {@link io.kiln.pools.trace.Spans} local service.
 */
package io.kiln.deploy.tracing;
