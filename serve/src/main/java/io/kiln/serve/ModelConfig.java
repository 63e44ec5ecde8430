package io.kiln.serve;

import io.kiln.pools.TensorSpec;
import io.kiln.serve.impl.Rules;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What model a deployment serves and how to load it. Immutable; every rule is checked on construction and
 * a violation throws {@link IllegalArgumentException} naming the field.
 *
 * @param uri a model folder (an absolute path once loaded: relative paths in YAML are resolved against the
 *     YAML file's folder) or {@code builtin:<name>} for a model built into Kiln
 * @param engine the engine that runs it; {@link ModelEngine#BUILTIN} exactly when {@code uri} is builtin
 * @param format how the folder stores the model (PyTorch only); empty: detected from the files
 * @param architecture the network to build for {@link ModelFormat#DJL_PARAMS}; required with that format,
 *     refused with TorchScript
 * @param inputs declared inputs, at least one, names unique; the first dimension is the batch dimension
 * @param outputs declared outputs, at least one, names unique
 * @param warmup batches each worker runs once after loading, before it takes traffic
 * @param threads PyTorch thread pools per worker; empty: the engine's defaults
 */
public record ModelConfig(String uri, ModelEngine engine, Optional<ModelFormat> format, Optional<String> architecture,
                          List<TensorSpec> inputs, List<TensorSpec> outputs, WarmupSpec warmup,
                          Optional<ThreadsSpec> threads) {

  public ModelConfig {
    Objects.requireNonNull(uri, "uri");
    Objects.requireNonNull(engine, "engine");
    Objects.requireNonNull(format, "format");
    Objects.requireNonNull(architecture, "architecture");
    Objects.requireNonNull(warmup, "warmup");
    Objects.requireNonNull(threads, "threads");
    inputs = List.copyOf(inputs);
    outputs = List.copyOf(outputs);
    Rules.require("uri", Rules.notBlank(uri));
    Rules.require("uri", Rules.engineMatchesUri(engine, uri));
    if (uri.startsWith(Rules.BUILTIN_PREFIX)) {
      Rules.require("uri", Rules.builtinName(uri.substring(Rules.BUILTIN_PREFIX.length())));
    }
    Rules.require("format", Rules.formatFits(engine, format));
    architecture.ifPresent(a -> Rules.require("architecture", Rules.notBlank(a)));
    Rules.require("architecture", Rules.architectureFits(format, architecture));
    checkTensors("input", inputs);
    checkTensors("output", outputs);
  }

  private static void checkTensors(String kind, List<TensorSpec> tensors) {
    if (tensors.isEmpty()) {
      throw new IllegalArgumentException(kind + "s must declare at least one tensor");
    }
    Map<String, Integer> seen = new HashMap<>();
    for (int i = 0; i < tensors.size(); i++) {
      TensorSpec t = tensors.get(i);
      Rules.require(kind + "s[" + i + "].name", Rules.notBlank(t.name()));
      Rules.require(kind + "s[" + i + "].shape", Rules.rank(t.shape().length));
      Integer first = seen.putIfAbsent(t.name(), i);
      if (first != null) {
        throw new IllegalArgumentException(kind + "s[" + i + "].name " + Rules.uniqueTensor(kind, t.name(), first));
      }
    }
  }

  public boolean isBuiltin() {
    return engine == ModelEngine.BUILTIN;
  }

  /** The builtin model's name ({@code identity} for {@code builtin:identity}), or empty for a folder. */
  public Optional<String> builtinName() {
    return isBuiltin() ? Optional.of(uri.substring(Rules.BUILTIN_PREFIX.length())) : Optional.empty();
  }

  /** The model folder, or empty for a builtin model. */
  public Optional<Path> path() {
    return isBuiltin() ? Optional.empty() : Optional.of(Path.of(uri));
  }
}
