package io.kiln.serve;

import java.util.Optional;

/** The engine that runs a deployment's model, spelled in YAML as {@link #spelling()}. */
public enum ModelEngine {
  /** DJL's PyTorch engine: a TorchScript file or DJL parameters in the model folder. */
  PYTORCH("PyTorch"),
  /** A model built into Kiln ({@code uri: builtin:identity}), for tests and smoke checks; needs no files. */
  BUILTIN("Builtin");

  private final String spelling;

  ModelEngine(String spelling) {
    this.spelling = spelling;
  }

  /** The YAML/JSON spelling, e.g. {@code PyTorch}. */
  public String spelling() {
    return spelling;
  }

  /** The engine spelled exactly {@code text}, or empty. */
  public static Optional<ModelEngine> parse(String text) {
    for (ModelEngine e : values()) {
      if (e.spelling.equals(text)) {
        return Optional.of(e);
      }
    }
    return Optional.empty();
  }

  @Override
  public String toString() {
    return spelling;
  }
}
