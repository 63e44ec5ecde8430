package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.spi.AbstractModelRunner;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A runner's engine is never freed under a running batch: a node that closes its workers (or a worker restarted as
 * stuck) while a batch runs on the worker's thread crashed the JVM inside ONNX Runtime (SIGSEGV in
 * {@code OrtSession.run}, seen on 2026-12-06 when a node shut down under load). {@link AbstractModelRunner#close} ({@link io.kiln.pools.spi.EngineGuard})
 * waits for the batch, then releases; later batches are refused.
 */
class RunnerCloseTest {

  /** A runner whose forward blocks until told, and which records whether release ran during a forward. */
  private static final class Gated extends AbstractModelRunner {
    final CountDownLatch entered = new CountDownLatch(1);
    final CountDownLatch proceed = new CountDownLatch(1);
    final AtomicBoolean inForward = new AtomicBoolean();
    final AtomicBoolean releasedDuringForward = new AtomicBoolean();
    final AtomicInteger releases = new AtomicInteger();

    Gated() {
      super(ModelSpec.builder().uri(Path.of("gated")).input("x", DataType.FP32, -1, 2)
          .output("y", DataType.FP32, -1, 2).build(), List.of(new io.kiln.pools.TensorSpec("y", DataType.FP32,
          new long[] {-1, 2})));
    }

    @Override
    protected List<Tensor> forward(List<Tensor> inputs) {
      inForward.set(true);
      entered.countDown();
      try {
        assertThat(proceed.await(60, TimeUnit.SECONDS)).isTrue();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      inForward.set(false);
      return List.of(inputs.get(0).withName("y"));
    }

    @Override
    protected void release() {
      releases.incrementAndGet();
      releasedDuringForward.compareAndSet(false, inForward.get());
    }
  }

  private static InferenceRequest row() {
    return InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 2}, new float[] {1, 2}));
  }

  @Test
  void closeWaitsForTheRunningBatchAndOnlyThenReleasesTheEngine() throws Exception {
    Gated r = new Gated();
    CompletableFuture<List<List<Tensor>>> batch = CompletableFuture.supplyAsync(() -> r.infer(List.of(row())));
    assertThat(r.entered.await(30, TimeUnit.SECONDS)).isTrue();

    CompletableFuture<Void> closing = CompletableFuture.runAsync(r::close);
    // close() is blocked behind the batch: nothing is released while forward runs.
    await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5)).until(() -> r.releases.get() == 0);
    assertThat(closing).isNotDone();

    r.proceed.countDown();
    assertThat(batch.get(30, TimeUnit.SECONDS).get(0).get(0).asFloats()).containsExactly(1, 2);
    closing.get(30, TimeUnit.SECONDS);
    assertThat(r.releases.get()).isEqualTo(1);
    assertThat(r.releasedDuringForward.get()).isFalse();

    assertThatThrownBy(() -> r.infer(List.of(row()))).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
    r.close();
    assertThat(r.releases.get()).as("released once").isEqualTo(1);
  }
}
