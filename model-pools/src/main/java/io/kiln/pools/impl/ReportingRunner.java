package io.kiln.pools.impl;

import io.kiln.pools.ChunkStep;
import io.kiln.pools.ChunkStream;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelLoadInfo;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.StreamingModelRunner;
import io.kiln.pools.Tensor;
import io.kiln.pools.spi.AbstractModelRunner;
import java.util.List;
import java.util.OptionalLong;

/**
 * A third-party engine's runner with the load info Kiln recorded for it (Kiln's own runners keep theirs in
 * {@link AbstractModelRunner}); every other call goes to the runner. A streaming runner stays streaming.
 */
class ReportingRunner implements ModelRunner {

  private final ModelRunner runner;
  private final ModelLoadInfo info;

  ReportingRunner(ModelRunner runner, ModelLoadInfo info) {
    this.runner = runner;
    this.info = info;
  }

  static ModelRunner of(ModelRunner runner, ModelLoadInfo info) {
    return runner instanceof StreamingModelRunner s ? new Streaming(s, info) : new ReportingRunner(runner, info);
  }

  @Override
  public ModelSpec spec() {
    return runner.spec();
  }

  @Override
  public ModelLoadInfo loadInfo() {
    return info;
  }

  @Override
  public List<List<Tensor>> infer(List<InferenceRequest> batch) {
    return runner.infer(batch);
  }

  @Override
  public OptionalLong processId() {
    return runner.processId();
  }

  @Override
  public OptionalLong memoryBytes() {
    return runner.memoryBytes();
  }

  @Override
  public void bindMeters(io.micrometer.core.instrument.MeterRegistry registry,
                         io.micrometer.core.instrument.Tags tags) {
    runner.bindMeters(registry, tags);
  }

  @Override
  public void close() {
    runner.close();
  }

  private static final class Streaming extends ReportingRunner implements StreamingModelRunner {

    private final StreamingModelRunner streaming;

    Streaming(StreamingModelRunner runner, ModelLoadInfo info) {
      super(runner, info);
      this.streaming = runner;
    }

    @Override
    public ChunkStream open(InferenceRequest request) {
      return streaming.open(request);
    }

    @Override
    public List<ChunkStep> next(List<ChunkStream> streams) {
      return streaming.next(streams);
    }
  }
}
