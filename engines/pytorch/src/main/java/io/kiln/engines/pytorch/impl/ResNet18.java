package io.kiln.engines.pytorch.impl;

import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.Blocks;
import ai.djl.nn.ParallelBlock;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.convolutional.Conv2d;
import ai.djl.nn.core.Linear;
import ai.djl.nn.norm.BatchNorm;
import ai.djl.nn.pooling.Pool;
import java.util.List;

/**
 * ResNet-18 as in He et al. (2015): 7×7 stem, max-pool, four stages of two basic blocks (64, 128, 256,
 * 512 channels; projection shortcuts where the shape changes), global average pool and a linear
 * classifier. About 11.7 M parameters with 1000 classes; works for any input of at least 32×32.
 */
final class ResNet18 {

  private static final int[] WIDTHS = {64, 128, 256, 512};

  private ResNet18() {
  }

  static Block build(long classes) {
    SequentialBlock net = new SequentialBlock()
        .add(conv(64, 7, 2, 3))
        .add(batchNorm())
        .add(Activation.reluBlock())
        .add(Pool.maxPool2dBlock(new Shape(3, 3), new Shape(2, 2), new Shape(1, 1)));
    int inChannels = 64;
    for (int stage = 0; stage < WIDTHS.length; stage++) {
      int width = WIDTHS[stage];
      int stride = stage == 0 ? 1 : 2;
      net.add(basicBlock(width, stride, stride != 1 || inChannels != width));
      net.add(basicBlock(width, 1, false));
      inChannels = width;
    }
    return net.add(Pool.globalAvgPool2dBlock())
        .add(Blocks.batchFlattenBlock())
        .add(Linear.builder().setUnits(classes).build());
  }

  private static Block basicBlock(int width, int stride, boolean project) {
    SequentialBlock main = new SequentialBlock()
        .add(conv(width, 3, stride, 1))
        .add(batchNorm())
        .add(Activation.reluBlock())
        .add(conv(width, 3, 1, 1))
        .add(batchNorm());
    Block shortcut = project
        ? new SequentialBlock().add(conv(width, 1, stride, 0)).add(batchNorm())
        : Blocks.identityBlock();
    return new SequentialBlock()
        .add(new ParallelBlock(list -> new NDList(list.get(0).singletonOrThrow().add(list.get(1).singletonOrThrow())),
            List.of(main, shortcut)))
        .add(Activation.reluBlock());
  }

  private static Block conv(int filters, int kernel, int stride, int padding) {
    return Conv2d.builder()
        .setKernelShape(new Shape(kernel, kernel))
        .setFilters(filters)
        .optStride(new Shape(stride, stride))
        .optPadding(new Shape(padding, padding))
        .optBias(false)
        .build();
  }

  private static Block batchNorm() {
    return BatchNorm.builder().optEpsilon(1e-5f).build();
  }
}
