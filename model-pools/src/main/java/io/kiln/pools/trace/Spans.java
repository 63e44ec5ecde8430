package io.kiln.pools.trace;

/**
 * Where a node's spans go: the node's local service ({@code KilnRuntime#localService(Spans.class)}) when it exports
 * spans (deploy's OpenTelemetry exporter, {@code --otel-endpoint}); absent otherwise, and then {@link #OFF} stands
 * in: nothing is created, recorded or sent, and a request's only trace work is carrying the traceparent it came
 * with.
 *
 * <p>Span names: {@code kiln.gateway.request} (the gateway, from the request's arrival to its answer; kind SERVER),
 * {@code kiln.pool.queue} (the pool manager, from the request's arrival to its dispatch), {@code kiln.worker.batch}
 * (the worker, one batch's compute, one span per traced request of the batch, attribute {@code kiln.batch.size}).
 *
 * <p><b>Threading:</b> thread-safe; {@link #start} and the span's methods never block (export runs in the
 * background).
 */
public interface Spans {

  /** No export: {@link #start} is never called when {@link #enabled()} is false. */
  Spans OFF = new Spans() {
    @Override
    public boolean enabled() {
      return false;
    }

    @Override
    public Span start(String name, TraceParent parent, String tracestate, boolean server) {
      throw new IllegalStateException("spans are off");
    }
  };

  /** Whether spans are recorded and exported. */
  boolean enabled();

  /**
   * Starts a span now.
   *
   * @param parent the remote parent (the previous hop's span), or null for a new trace
   * @param tracestate the caller's tracestate, carried on, or null
   * @param server whether it is the span of a request received from outside (kind SERVER; else INTERNAL)
   */
  Span start(String name, TraceParent parent, String tracestate, boolean server);

  /** A span in progress. End it exactly once. */
  interface Span {

    /** This span as a parent: the traceparent the next hop continues. */
    TraceParent context();

    Span attribute(String key, String value);

    Span attribute(String key, long value);

    /** Marks the span failed, with a description. */
    Span error(String description);

    void end();
  }
}
