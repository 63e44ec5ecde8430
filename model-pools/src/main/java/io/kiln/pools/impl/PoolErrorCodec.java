package io.kiln.pools.impl;

import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import io.kiln.pools.ModelExecutionException;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.spi.SpecMismatchException;
import io.kiln.runtime.spi.codec.WireErrorCodec;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Carries the pools' exceptions across nodes as themselves: {@link InferenceException} with its kind,
 * {@link CapacityExceededException} with its retry-after, {@link ModelExecutionException} and
 * {@link ModelLoadException}. A subclass of {@code InferenceException} unknown here arrives as an
 * {@code InferenceException} of the same kind. Registered through
 * {@code META-INF/services/io.kiln.runtime.spi.codec.WireErrorCodec}.
 */
public final class PoolErrorCodec implements WireErrorCodec {

  public static final String TYPE = "kiln.pools";

  @Override
  public String type() {
    return TYPE;
  }

  @Override
  public boolean handles(Throwable error) {
    return error instanceof InferenceException || error instanceof ModelExecutionException
        || error instanceof ModelLoadException;
  }

  @Override
  public Map<String, Object> encode(Throwable error) {
    Map<String, Object> m = new LinkedHashMap<>();
    if (error instanceof CapacityExceededException c) {
      m.put("class", "CapacityExceededException");
      m.put("retryAfterMs", c.retryAfter() == null ? null : c.retryAfter().toMillis());
    } else if (error instanceof InferenceException ie) {
      m.put("class", "InferenceException");
      m.put("kind", ie.kind().name());
    } else {
      // A subclass (a SpecMismatchException) crosses as what the other side knows.
      m.put("class", error instanceof ModelLoadException ? "ModelLoadException" : "ModelExecutionException");
    }
    return m;
  }

  @Override
  public Throwable decode(String message, Map<String, Object> data) {
    String cls = String.valueOf(data.get("class"));
    return switch (cls) {
      case "CapacityExceededException" -> new CapacityExceededException(message,
          data.get("retryAfterMs") instanceof Number n ? Duration.ofMillis(n.longValue()) : null);
      case "ModelExecutionException" -> new ModelExecutionException(message);
      case "ModelLoadException" -> new ModelLoadException(message);
      default -> new InferenceException(kind(data.get("kind")), message);
    };
  }

  private static InferenceException.Kind kind(Object name) {
    for (InferenceException.Kind k : InferenceException.Kind.values()) {
      if (k.name().equals(name)) {
        return k;
      }
    }
    return InferenceException.Kind.INTERNAL;
  }
}
