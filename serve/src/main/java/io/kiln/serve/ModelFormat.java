package io.kiln.serve;

import java.util.Optional;

/**
 * How the model is stored in its folder. Optional in a spec: without it the worker detects the format
 * from the files it finds.
 */
public enum ModelFormat {
  /** A traced or scripted TorchScript file ({@code *.pt}). */
  TORCHSCRIPT("torchscript"),
  /** DJL parameters ({@code *.params}) for a block that Kiln builds from {@code architecture}. */
  DJL_PARAMS("djl-params");

  private final String spelling;

  ModelFormat(String spelling) {
    this.spelling = spelling;
  }

  /** The YAML/JSON spelling, e.g. {@code djl-params}. */
  public String spelling() {
    return spelling;
  }

  /** The format spelled exactly {@code text}, or empty. */
  public static Optional<ModelFormat> parse(String text) {
    for (ModelFormat f : values()) {
      if (f.spelling.equals(text)) {
        return Optional.of(f);
      }
    }
    return Optional.empty();
  }

  @Override
  public String toString() {
    return spelling;
  }
}
