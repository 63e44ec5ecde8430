package io.kiln.gateway;

/**
 * A hold on a gateway's readiness, taken with {@link KilnGateway#holdReadiness}: while any hold is in place,
 * the server answers not ready ({@code /v2/health/ready} 503 with the hold's reason, gRPC ServerReady false)
 * and so does every model of the directory ({@code /v2/models/{m}/ready} 503, ModelReady false; inference
 * requests to them are refused as for a model not ready unless the directory
 * {@link io.kiln.gateway.spi.ModelDirectory#servesWhileHeld serves them while held}), except the directory's
 * {@link io.kiln.gateway.spi.ModelDirectory#internal internal} models, which serve as usual. Liveness and
 * everything else are unaffected.
 *
 * <p>Thread-safe.
 */
public interface ReadinessHold extends AutoCloseable {

  /** Why the gateway is held not ready, as {@code /v2/health/ready} reports it. */
  String reason();

  /** Lifts this hold (the gateway is ready again once no other hold remains); idempotent. */
  void release();

  /** {@link #release()}. */
  @Override
  default void close() {
    release();
  }
}
