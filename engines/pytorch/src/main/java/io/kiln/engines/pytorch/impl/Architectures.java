package io.kiln.engines.pytorch.impl;

import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.TensorSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The blocks a DJL {@code .params} file can be loaded into, by name. A {@code .params} file holds weights
 * only, so the worker must construct the same block that saved them:
 *
 * <ul>
 *   <li>{@code mlp} or {@code mlp:W1,W2,...}: fully connected layers of the given hidden widths (default one
 *       of 256), each followed by ReLU, then a linear layer as wide as the spec's first output's last dimension.
 *   <li>{@code resnet18}: ResNet-18 (basic blocks, batch norm, ImageNet stem) for NCHW images, with as many
 *       classes as the spec's first output's last dimension.
 * </ul>
 */
public final class Architectures {

  /** A parsed architecture name. */
  public record Architecture(String family, List<Integer> hidden) {
    public Architecture {
      hidden = List.copyOf(hidden);
    }
  }

  public static final List<Integer> DEFAULT_MLP_HIDDEN = List.of(256);
  private static final int MAX_WIDTH = 1 << 20;

  private Architectures() {
  }

  /** Human-readable list of what {@link #parse} accepts. */
  public static String describe() {
    return "mlp, mlp:<width>[,<width>...], resnet18";
  }

  /** @throws IllegalArgumentException if {@code name} is not one of {@link #describe()} */
  public static Architecture parse(String name) {
    String n = name.trim().toLowerCase(Locale.ROOT);
    if (n.equals("resnet18")) {
      return new Architecture("resnet18", List.of());
    }
    if (n.equals("mlp")) {
      return new Architecture("mlp", DEFAULT_MLP_HIDDEN);
    }
    if (n.startsWith("mlp:")) {
      List<Integer> widths = new ArrayList<>();
      for (String w : n.substring(4).split(",", -1)) {
        int width;
        try {
          width = Integer.parseInt(w.trim());
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException("architecture: '" + name + "' has a width that is not a number: '" + w + "'");
        }
        if (width < 1 || width > MAX_WIDTH) {
          throw new IllegalArgumentException("architecture: widths in '" + name + "' must be in 1.." + MAX_WIDTH);
        }
        widths.add(width);
      }
      return new Architecture("mlp", widths);
    }
    throw new IllegalArgumentException("architecture: unknown '" + name + "', expected one of " + describe());
  }

  /**
   * Constructs the (uninitialized) block for {@code spec.architecture()}.
   *
   * @throws IllegalArgumentException if the spec's first output has no fixed last dimension
   */
  public static Block build(ModelSpec spec) {
    Architecture arch = parse(spec.architecture());
    TensorSpec out = spec.outputs().get(0);
    long[] shape = out.shape();
    long classes = shape[shape.length - 1];
    if (shape.length < 2 || classes < 1) {
      throw new IllegalArgumentException("outputs: '" + out.name() + "' needs a fixed last dimension (the width of "
          + spec.architecture() + "'s last layer), got " + out);
    }
    return arch.family().equals("resnet18") ? ResNet18.build(classes) : mlp(arch.hidden(), classes);
  }

  static Block mlp(List<Integer> hidden, long outputs) {
    SequentialBlock block = new SequentialBlock();
    for (int width : hidden) {
      block.add(Linear.builder().setUnits(width).build()).add(Activation.reluBlock());
    }
    return block.add(Linear.builder().setUnits(outputs).build());
  }
}
