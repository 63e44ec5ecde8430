package io.kiln.pools.spi;

import io.kiln.pools.TensorSpec;
import java.util.List;
import java.util.Map;

/**
 * The fields of a model spec an engine's {@link Engine#check} judges, already normalised (trimmed, the format
 * lower-cased, absent lists empty).
 *
 * @param uri the folder, file or {@code builtin:<name>} as written
 * @param format {@value io.kiln.pools.ModelSpec#FORMAT_AUTO} or a declared format
 * @param architecture the declared architecture, empty for none
 * @param inputs the declared inputs
 * @param outputs the declared outputs (may be empty)
 * @param streaming whether the model declares it streams
 * @param options the engine's own settings as written (see {@link io.kiln.pools.ModelSpec#options()})
 */
public record SpecFields(String uri, String format, String architecture, List<TensorSpec> inputs,
                         List<TensorSpec> outputs, boolean streaming, Map<String, String> options) {

  public SpecFields {
    inputs = List.copyOf(inputs);
    outputs = List.copyOf(outputs);
    options = options == null ? Map.of() : Map.copyOf(options);
  }

  /** Fields without engine options. */
  public SpecFields(String uri, String format, String architecture, List<TensorSpec> inputs,
                    List<TensorSpec> outputs, boolean streaming) {
    this(uri, format, architecture, inputs, outputs, streaming, Map.of());
  }

  /** Only a uri that streams: what {@link io.kiln.pools.SpecRules#streamingFits} asks an engine about. */
  public static SpecFields streaming(String uri) {
    return new SpecFields(uri, io.kiln.pools.ModelSpec.FORMAT_AUTO, "", List.of(), List.of(), true);
  }
}
