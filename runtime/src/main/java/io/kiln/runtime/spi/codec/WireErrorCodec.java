package io.kiln.runtime.spi.codec;

import java.util.Map;

/**
 * Carries one family of exceptions across nodes so the caller receives the same type it would have
 * locally (for example the pools' {@code InferenceException} with its kind). Registered through
 * {@code META-INF/services/io.kiln.runtime.spi.codec.WireErrorCodec}.
 *
 * <p>Contract: {@link #decode} of {@link #encode}'s output yields an exception of the same class with
 * the same message; {@code encode} returns only strings, numbers, booleans, lists and maps; neither
 * method throws.
 */
public interface WireErrorCodec {

  /** A stable wire id, e.g. {@code "kiln.inference"}. */
  String type();

  /** Whether this codec encodes {@code error} (checked in registration order). */
  boolean handles(Throwable error);

  /** Extra fields beyond the message. */
  Map<String, Object> encode(Throwable error);

  Throwable decode(String message, Map<String, Object> data);
}
