package io.kiln.engines.llm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.engines.llm.impl.DecoderRunner;
import io.kiln.engines.llm.impl.TestModels;
import io.kiln.pools.ModelFolders;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.StreamingModelRunner;
import io.kiln.pools.Tensor;
import io.kiln.pools.TextModels;
import io.kiln.pools.spi.Engine;
import io.kiln.pools.spi.Engines;
import io.kiln.pools.spi.SpecFields;
import io.kiln.pools.spi.SpecProblem;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The engines as Kiln sees them: found by ServiceLoader, their spec checks, their loads. */
class EnginesTest {

  private static final Engine DECODER = new DecoderEngine();
  private static final Engine ENCODER = new EncoderEngine();

  private static SpecFields fields(Map<String, String> options) {
    return new SpecFields("models/llm/tiny-gpt", ModelSpec.FORMAT_AUTO, "", List.of(), List.of(), true, options);
  }

  @Test
  void serviceLoaderFindsBothEngines() {
    assertThat(Engines.load(getClass().getClassLoader()).names()).contains("Decoder", "Encoder");
    assertThat(ModelSpec.engines()).contains("Decoder", "Encoder");
  }

  @Test
  void aPlainOnnxFolderStaysWithTheOnnxRuntimeEngine() {
    assertThat(DECODER.recognizes(ModelFolders.ONNX_FILE)).isFalse();
    assertThat(ENCODER.recognizes(ModelFolders.ONNX_FILE)).isFalse();
    assertThat(ModelFolders.engineOf(TestModels.tinyGpt())).hasValue(ModelSpec.ENGINE_ONNX);
  }

  @Test
  void capabilities() {
    assertThat(DECODER.capabilities().streams()).isTrue();
    assertThat(DECODER.capabilities().warmsItself()).isTrue();
    assertThat(DECODER.capabilities().usesGpus()).isFalse();
    assertThat(DECODER.capabilities().reportsMemory()).isTrue();
    assertThat(ENCODER.capabilities().streams()).isFalse();
    assertThat(ENCODER.capabilities().reportsMemory()).isTrue();
  }

  @Test
  void specsThatDeclareNoTensorsGetTheTextContract() {
    ModelSpec decoder = ModelSpec.builder().uri(TestModels.tinyGpt()).engine("decoder").build();
    assertThat(decoder.engine()).isEqualTo("Decoder");
    assertThat(decoder.streaming()).isTrue();
    assertThat(TextModels.generates(decoder.signature())).isTrue();
    ModelSpec encoder = ModelSpec.builder().uri(TestModels.miniLm()).engine("Encoder").build();
    assertThat(encoder.streaming()).isFalse();
    assertThat(TextModels.embeds(encoder.signature())).isTrue();
  }

  @Test
  void badOptionsAreRefusedNamingTheOption() {
    Map<String, String> bad = Map.of(
        "max_batched_tokens", "0", "kv_cache_tokens", "lots", "block_size", "2000", "max_model_len", "1",
        "prefix_cache", "maybe", "schedule", "fifo", "max_prefill_steps", "0");
    for (Map.Entry<String, String> e : bad.entrySet()) {
      List<SpecProblem> problems = DECODER.check(fields(Map.of(e.getKey(), e.getValue())));
      assertThat(problems).as(e.getKey()).isNotEmpty();
      assertThat(problems.get(0).toString()).startsWith("options." + e.getKey() + ": ");
    }
    assertThat(DECODER.check(fields(Map.of("kv_cache_tokens", "16"))).get(0).toString())
        .startsWith("options.kv_cache_tokens: ").contains("two blocks");
    assertThat(DECODER.check(fields(Map.of("max_num_seqs", "4"))).get(0).toString())
        .startsWith("options.max_num_seqs: ");
    assertThat(ENCODER.check(fields(Map.of("pooling", "max"))).get(0).toString()).startsWith("options.pooling: ");
    assertThat(ENCODER.check(fields(Map.of("max_length", "-3"))).get(0).toString())
        .startsWith("options.max_length: ");
    assertThat(DECODER.check(fields(Map.of("max_batched_tokens", "64", "kv_cache_tokens", "1024",
        "block_size", "32", "max_model_len", "256", "prefix_cache", "FALSE", "schedule", "Mixed",
        "max_prefill_steps", "8")))).isEmpty();
    assertThat(DECODER.check(fields(Map.of("schedule", "prefill_first"))).get(0).toString())
        .isEqualTo("options.schedule: must be one of prefill-first, mixed, got 'prefill_first'");
    assertThat(DECODER.optionNames()).containsExactlyInAnyOrder("max_batched_tokens", "kv_cache_tokens",
        "block_size", "max_model_len", "prefix_cache", "schedule", "max_prefill_steps");
    assertThat(ENCODER.optionNames()).containsExactlyInAnyOrder("max_length", "normalize", "pooling");
    assertThatThrownBy(() -> ModelSpec.builder().uri(TestModels.tinyGpt()).engine("Decoder")
        .options(Map.of("block_size", "0")).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("options.block_size: ");
  }

  @Test
  void declaredTensorsMustBeTheContracts() {
    SpecFields wrongInput = new SpecFields("m", ModelSpec.FORMAT_AUTO, "",
        List.of(new io.kiln.pools.TensorSpec("input_ids", io.kiln.pools.DataType.INT64, new long[] {-1, -1})),
        TextModels.generation().outputs(), true, Map.of());
    assertThat(DECODER.check(wrongInput)).extracting(SpecProblem::field).contains("inputs");
    SpecFields format = new SpecFields("m", "torchscript", "", List.of(), List.of(), true, Map.of());
    assertThat(DECODER.check(format)).extracting(SpecProblem::field).contains("format");
    SpecFields subset = new SpecFields("m", ModelSpec.FORMAT_AUTO, "", TextModels.generation().inputs(),
        TextModels.generation().outputs().subList(0, 2), true, Map.of());
    assertThat(DECODER.check(subset)).isEmpty();
  }

  @Test
  void aWorkerAssignedAGpuFailsUnlessItMayFallBackToTheCpu() {
    ModelSpec spec = TestModels.decoderSpec(Map.of());
    assertThatThrownBy(() -> DECODER.load(spec, List.of(0))).isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("allow_cpu_fallback");
    Engine.Loaded loaded = DECODER.load(spec.toBuilder().allowCpuFallback(true).build(), List.of(0));
    try (ModelRunner runner = loaded.runner()) {
      assertThat(loaded.device()).isEqualTo("cpu()");
      assertThat(loaded.format()).isEqualTo("onnx");
      assertThat(runner).isInstanceOf(StreamingModelRunner.class);
    }
  }

  @Test
  void kilnsLoaderServesTheDecoderAsAStreamingModel() throws Exception {
    ModelSpec spec = TestModels.decoderSpec(Map.of()).toBuilder().warmupBatchSizes(1, 2).build();
    try (ModelRunner runner = ModelRunners.load(spec, List.of())) {
      assertThat(runner.loadInfo().engine()).isEqualTo("Decoder");
      assertThat(runner.memoryBytes().getAsLong()).isGreaterThan(Files.size(TestModels.tinyGpt()
          .resolve("model.onnx")));
      StreamingModelRunner streaming = (StreamingModelRunner) runner;
      try (var stream = streaming.open(TestModels.request("Hello, my name is", TextModels.TEMPERATURE, 0L,
          TextModels.MAX_TOKENS, 1L))) {
        List<Tensor> chunk = stream.next();
        assertThat(chunk).extracting(Tensor::name).containsExactly(TextModels.TEXT_OUTPUT, TextModels.FINISH_REASON,
            TextModels.PROMPT_TOKENS, TextModels.COMPLETION_TOKENS);
        assertThat(TestModels.string(chunk.get(0))).isEqualTo("update");
        assertThat(TestModels.string(chunk.get(1))).isEqualTo(TextModels.FINISH_LENGTH);
        assertThat(stream.next()).isNull();
      }
      List<List<Tensor>> warm = runner.infer(List.of(TestModels.request(""), TestModels.request("")));
      assertThat(warm).hasSize(2).allSatisfy(c -> assertThat(c).hasSize(4));
    }
  }

  @Test
  void foldersThatAreNotDecodersAreRefusedAtLoad(@TempDir Path tmp) throws Exception {
    Path noTokenizer = TestModels.variant(TestModels.tinyGpt(), tmp, java.util.Collections.singletonMap(
        "tokenizer.json", null));
    assertThatThrownBy(() -> DECODER.load(TestModels.decoderSpec(noTokenizer, Map.of()), List.of()))
        .isInstanceOf(ModelLoadException.class).hasMessageContaining("tokenizer.json");
    assertThatThrownBy(() -> DECODER.load(ModelSpec.builder().uri(TestModels.miniLm()).engine("Decoder").build(),
        List.of())).isInstanceOf(ModelLoadException.class).hasMessageContaining("text-generation-with-past");
    assertThatThrownBy(() -> DECODER.load(TestModels.decoderSpec(Map.of("max_model_len", "1024")), List.of()))
        .isInstanceOf(ModelLoadException.class).hasMessageContaining("max_model_len");
    Files.createDirectories(tmp.resolve("empty"));
    assertThatThrownBy(() -> ENCODER.load(ModelSpec.builder().uri(tmp.resolve("empty")).engine("Encoder").build(),
        List.of())).isInstanceOf(ModelLoadException.class).hasMessageContaining("model.onnx");
  }

  @Test
  void maxModelLenBoundsTheContext() {
    try (DecoderRunner runner = (DecoderRunner) DECODER.load(TestModels.decoderSpec(Map.of("max_model_len", "64")),
        List.of()).runner()) {
      assertThat(runner.contextLength()).isEqualTo(64);
      assertThatThrownBy(() -> runner.open(TestModels.request(" tick".repeat(64))))
          .hasMessageStartingWith("text_input: ");
    }
  }
}
