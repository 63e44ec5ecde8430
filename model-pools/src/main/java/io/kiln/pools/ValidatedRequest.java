package io.kiln.pools;

import java.util.Objects;

/**
 * An {@link InferenceRequest} that passed a {@link RequestValidator}: only the validator makes one. Send it
 * with {@link PoolClient#infer(RequestContext, String, String, String, ValidatedRequest)} and the pool
 * and its workers do not check it again. It never crosses nodes as itself: a pool on another node gets the
 * request marked as validated by the sending node ({@link PoolRequest#validated()}; cluster members are
 * trusted, as everywhere in Kiln). Immutable.
 */
public final class ValidatedRequest {

  private final InferenceRequest request;
  private final ModelSignature signature;

  ValidatedRequest(InferenceRequest request, ModelSignature signature) {
    this.request = Objects.requireNonNull(request, "request");
    this.signature = Objects.requireNonNull(signature, "signature");
  }

  /** The request as checked. */
  public InferenceRequest request() {
    return request;
  }

  /**
   * This request with one more protocol parameter (e.g. {@link ModelRepository#MODEL_ID}, set by the router of a
   * multiplexed deployment): parameters are not part of what a validator checks, so it stays validated.
   */
  public ValidatedRequest withParameter(String key, Object value) {
    java.util.Map<String, Object> p = new java.util.HashMap<>(request.parameters());
    p.put(key, value);
    return new ValidatedRequest(new InferenceRequest(request.id(), request.inputs(), request.outputs(), p), signature);
  }

  /** What it was checked against. */
  public ModelSignature signature() {
    return signature;
  }

  @Override
  public String toString() {
    return "validated " + request;
  }
}
