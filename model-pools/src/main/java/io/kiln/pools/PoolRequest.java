package io.kiln.pools;

import java.util.Objects;

/**
 * One inference request on its way to a {@link PoolManager}, with what the manager needs besides the
 * tensors: the wire form of its {@link RequestContext} (the time left, its trace, its priority, and for its
 * {@link Cancellation} a ticket that {@link PoolManager#cancel} names it by). The manager makes the pool's own context
 * of it. One constructor, the canonical one.
 *
 * @param request the request
 * @param timeoutMs time left until its deadline, counted from its arrival at the manager; 0 or less means
 *     the pool's default timeout
 * @param ticket unique per caller and request (e.g. {@code <node>/<client>/<sequence>}), or null when the
 *     caller will never cancel: the token's wire form, which the pool makes a token of its own for
 * @param validated whether the sender checked it with a {@link RequestValidator} (it sent a
 *     {@link ValidatedRequest}); the manager checks an unvalidated one itself, with the same validator
 * @param stream where the chunks of a streaming model's answer go; null for a request answered once
 * @param trace its request id and W3C trace context for the pool's and worker's logs and spans; null when it has
 *     none to carry (no traceparent came with it and its gateway records no spans)
 * @param priority its {@link RequestContext#priority()}; null reads as NORMAL
 */
public record PoolRequest(InferenceRequest request, long timeoutMs, String ticket, boolean validated,
                          StreamTarget stream, io.kiln.pools.trace.RequestTrace trace,
                          RequestContext.Priority priority) {

  public PoolRequest {
    Objects.requireNonNull(request, "request");
    priority = priority == null ? RequestContext.Priority.NORMAL : priority;
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
}
