package io.kiln.pools.spi;

import java.util.Objects;

/**
 * What is wrong with one field of a model spec.
 *
 * @param field the field as specs spell it ({@code outputs}, {@code format}, {@code architecture}, {@code uri},
 *     {@code streaming})
 * @param message what is wrong, without the field name
 */
public record SpecProblem(String field, String message) {

  public SpecProblem {
    Objects.requireNonNull(field, "field");
    Objects.requireNonNull(message, "message");
  }

  /** {@code field: message}, as {@link io.kiln.pools.ModelSpec} throws it. */
  @Override
  public String toString() {
    return field + ": " + message;
  }
}
