package io.kiln.pools;

import java.util.Objects;

/**
 * One inference request on its way to a {@link PoolManager}, with what the manager needs besides the
 * tensors: how long it may take and a ticket that {@link PoolManager#cancel} can name it by.
 *
 * @param request the request
 * @param timeoutMs time left until its deadline, counted from its arrival at the manager; 0 or less means
 *     the pool's default timeout
 * @param ticket unique per caller and request (e.g. {@code <node>/<client>/<sequence>}), or null when the
 *     caller will never cancel
 * @param validated whether the sender checked it with a {@link RequestValidator} (it sent a
 *     {@link ValidatedRequest}); the manager checks an unvalidated one itself, with the same validator
 * @param stream where the chunks of a streaming model's answer go; null for a request answered once
 * @param trace its request id and W3C trace context for the pool's and worker's logs and spans; null when it has
 *     none to carry (no traceparent came with it and its gateway records no spans)
 */
public record PoolRequest(InferenceRequest request, long timeoutMs, String ticket, boolean validated,
                          StreamTarget stream, io.kiln.pools.trace.RequestTrace trace) {

  public PoolRequest {
    Objects.requireNonNull(request, "request");
  }

  /** Without a trace. */
  public PoolRequest(InferenceRequest request, long timeoutMs, String ticket, boolean validated, StreamTarget stream) {
    this(request, timeoutMs, ticket, validated, stream, null);
  }

  /** The id its log lines name: the client's OIP id, else the trace's, else the ticket (unique per caller). */
  public String requestId() {
    if (!request.id().isEmpty()) {
      return request.id();
    }
    if (trace != null && !trace.requestId().isEmpty()) {
      return trace.requestId();
    }
    return ticket;
  }

  /** A request answered once. */
  public PoolRequest(InferenceRequest request, long timeoutMs, String ticket, boolean validated) {
    this(request, timeoutMs, ticket, validated, null);
  }

  /** An unvalidated request: the manager checks it. */
  public PoolRequest(InferenceRequest request, long timeoutMs, String ticket) {
    this(request, timeoutMs, ticket, false, null);
  }
}
