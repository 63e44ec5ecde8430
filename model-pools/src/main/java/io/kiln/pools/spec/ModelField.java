package io.kiln.pools.spec;

import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * One field of {@link io.kiln.pools.ModelSpec} as the schema ({@link ModelFields}) declares it. Immutable; its
 * functions are pure, so a field is safe to share between threads.
 *
 * @param component the {@link io.kiln.pools.ModelSpec} record component, also the field's name on the wire
 * @param yaml where YAML writes it: a key of the model section, or {@code section.key} inside a nested one
 *     ({@code threads.intra_op}); for a {@link Place#DEPLOYMENT} field, a key of the deployment
 * @param kind how it is written, and so how a generic reader or writer treats it
 * @param place whether it sits in the deployment's {@code model:} section or beside it
 * @param required whether YAML must give it (written always, even when equal to its default)
 * @param defaultValue the component's value when the field is not given (null for none)
 * @param defaultText the default as docs say it
 * @param owner the engine the field belongs to, or empty when every engine takes it
 * @param min least value YAML accepts ({@link FieldKind#INT}, each item of {@link FieldKind#INT_LIST})
 * @param max greatest value YAML accepts
 * @param choices the names an {@link FieldKind#ENUM} takes (a supplier: the engines are known only at run time)
 * @param rule the value rule the spec and its readers share: null when a given value is fine, else a message without
 *     the field name (as {@link io.kiln.pools.SpecRules}'); null for none
 * @param doc one line for the docs' field table
 */
public record ModelField(String component, String yaml, FieldKind kind, Place place, boolean required,
                         Object defaultValue, String defaultText, String owner, long min, long max,
                         Supplier<List<String>> choices, Function<Object, String> rule, String doc) {

  /** Where a field is written in a deployment. */
  public enum Place {
    /** In the {@code model:} section (or one of its nested sections). */
    MODEL,
    /** Beside {@code model:}, read by the deployment's reader and handed to the model ({@code sequence:}). */
    DEPLOYMENT
  }

  public ModelField {
    Objects.requireNonNull(component, "component");
    Objects.requireNonNull(yaml, "yaml");
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(place, "place");
    owner = owner == null ? "" : owner;
    choices = choices == null ? List::of : choices;
  }

  /** The nested section holding the field ({@code threads} for {@code threads.intra_op}), empty for none. */
  public String section() {
    int dot = yaml.indexOf('.');
    return dot < 0 ? "" : yaml.substring(0, dot);
  }

  /** The field's key within its section ({@code intra_op} for {@code threads.intra_op}). */
  public String key() {
    return yaml.substring(yaml.indexOf('.') + 1);
  }

  /** Whether {@code value} is what the spec holds when the field is not given. */
  public boolean isDefault(Object value) {
    return Objects.equals(value, defaultValue);
  }

  /** The rule's message for a given value; null when it is the default or fine. */
  public String problem(Object value) {
    return rule == null || value == null || isDefault(value) ? null : rule.apply(value);
  }

  /** Whether a model of {@code engine} may give this field. */
  public boolean takenBy(String engine) {
    return owner.isEmpty() || owner.equals(engine);
  }

  /** Why a model of {@code engine} (null: not known) may not give this field; null when it may. */
  public String ownerProblem(String engine) {
    if (engine != null && takenBy(engine)) {
      return null;
    }
    if (engine == null && owner.isEmpty()) {
      return null;
    }
    return "only for engine " + owner + (engine == null ? "" : ", this model's is " + engine);
  }

  @Override
  public String toString() {
    return yaml;
  }
}
