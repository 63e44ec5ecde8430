package io.kiln.pools;

import io.kiln.pools.spec.ModelFields;
import io.kiln.pools.spi.Engine;
import io.kiln.pools.spi.Engines;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * The checks and canonical forms of single {@link ModelSpec} fields, shared by its constructor and by the setters of
 * its {@link ModelSpec.Builder} that reject a wrong value at once. Each throws {@link IllegalArgumentException} whose
 * message starts with the field. Stateless.
 */
final class ModelSpecValues {

  private ModelSpecValues() {
  }

  static String canonicalEngine(String engine) {
    if (engine == null || engine.isBlank()) {
      throw new IllegalArgumentException("engine: required, one of " + String.join(", ", ModelSpec.engines()));
    }
    Engines engines = Engines.installed();
    return engines.findIgnoringCase(engine).map(Engine::name)
        .orElseThrow(() -> new IllegalArgumentException("engine: " + engines.unknown(engine)));
  }

  static String canonicalFormat(String format) {
    if (format == null || format.isBlank()) {
      return ModelSpec.FORMAT_AUTO;
    }
    String f = format.trim().toLowerCase(Locale.ROOT);
    if (!f.equals(ModelSpec.FORMAT_AUTO) && !ModelSpec.FORMATS.contains(f)) {
      throw new IllegalArgumentException("format: unknown format '" + format + "', expected "
          + ModelSpec.FORMAT_TORCHSCRIPT + ", " + ModelSpec.FORMAT_DJL_PARAMS + " or " + ModelSpec.FORMAT_AUTO);
    }
    return f;
  }

  static List<TensorSpec> copyTensors(String field, List<TensorSpec> specs) {
    if (specs.stream().anyMatch(Objects::isNull)) {
      throw new IllegalArgumentException(field + ": contains null");
    }
    return List.copyOf(specs);
  }

  static void checkTensors(String field, List<TensorSpec> specs) {
    Set<String> names = new HashSet<>();
    for (TensorSpec s : specs) {
      if (s.name().isBlank()) {
        throw new IllegalArgumentException(field + ": tensor names must not be blank");
      }
      if (!names.add(s.name())) {
        throw new IllegalArgumentException(field + ": duplicate tensor name '" + s.name() + "'");
      }
      if (SpecRules.rank(s.shape().length) != null) {
        throw new IllegalArgumentException(field + ": '" + s.name() + "' " + SpecRules.rank(s.shape().length));
      }
    }
  }

  static Map<String, String> copyOptions(Map<String, String> options) {
    if (options == null || options.isEmpty()) {
      return Map.of();
    }
    Map<String, String> copy = new TreeMap<>(); // sorted: one wire and YAML form per spec
    options.forEach((k, v) -> {
      if (k == null || k.isBlank() || v == null) {
        throw new IllegalArgumentException("options: '" + k + "' needs a name and a value");
      }
      copy.put(k.trim(), v.trim());
    });
    return Collections.unmodifiableMap(copy);
  }

  static void checkThreads(String field, int n) {
    String problem = ModelFields.threads(n);
    if (problem != null) {
      throw new IllegalArgumentException(field + ": " + problem);
    }
  }
}
