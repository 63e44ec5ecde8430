package io.kiln.pools;

import java.util.Objects;

/**
 * One stream a pool manager hands its worker, which runs it in its step loop (see {@link ModelWorker#streamLoop}).
 *
 * @param request the request, trusted
 * @param target where its chunks go
 * @param timeoutMs time left until its deadline when the manager dispatched it; the worker ends the stream with
 *     DEADLINE_EXCEEDED after that
 */
public record StreamCall(InferenceRequest request, StreamTarget target, long timeoutMs) {

  public StreamCall {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(target, "target");
  }
}
