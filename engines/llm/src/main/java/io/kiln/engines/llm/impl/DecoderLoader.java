package io.kiln.engines.llm.impl;

import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import io.kiln.pools.ChunkStream;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.TextModels;
import java.io.IOException;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeSet;
import org.slf4j.LoggerFactory;

/** Loads a {@link DecoderRunner} from a model folder, sizing its KV cache and context from the options and model. */
public final class DecoderLoader {

  static final String ENGINE = "Decoder";

  private DecoderLoader() {
  }

  /**
   * Loads and warms the decoder {@code spec} names for a worker assigned {@code gpus}. Blocking.
   *
   * @throws ModelLoadException naming the model and the cause, with everything it opened closed
   */
  public static DecoderRunner load(ModelSpec spec, List<Integer> gpus) {
    ModelFolder folder = ModelFolder.open(spec.uri(), ENGINE);
    DecoderOptions options;
    try {
      options = DecoderOptions.of(spec.options());
    } catch (IllegalArgumentException e) {
      throw new ModelLoadException("model " + spec.uri() + ": " + e.getMessage(), e);
    }
    TextTokenizer tokenizer = TextTokenizer.forDecoder(folder.tokenizerFile());
    OrtSession session = null;
    try {
      session = OrtSessions.open(spec, ENGINE, folder.modelFile(), gpus);
      DecoderSignature sig = DecoderSignature.of(session, folder, spec.uri().toString());
      int maxLen = maxModelLen(folder, options, spec);
      int blocks = options.kvCacheTokens() / options.blockSize();
      int context = Math.min(maxLen, blocks * options.blockSize());
      KvStore kv;
      try {
        kv = new KvStore(sig.layers(), sig.heads(), sig.headDim(), options.blockSize(), blocks);
      } catch (IllegalArgumentException | OutOfMemoryError e) {
        throw new ModelLoadException("model " + spec.uri() + ": options.kv_cache_tokens: " + e.getMessage(), e);
      }
      Set<Integer> eos = new TreeSet<>(folder.eosIds());
      folder.specialToken("eos_token").map(tokenizer::idOf).filter(OptionalInt::isPresent)
          .ifPresent(id -> eos.add(id.getAsInt()));
      OptionalInt bos = folder.bosId();
      if (bos.isEmpty()) {
        bos = folder.specialToken("bos_token").map(tokenizer::idOf).orElse(OptionalInt.empty());
      }
      Optional<ChatTemplate> chat = folder.chatTemplate().map(t -> new ChatTemplate(t,
          folder.specialToken("bos_token").orElse(""), folder.specialToken("eos_token").orElse("")));
      DecoderRunner.DecoderParts parts = new DecoderRunner.DecoderParts(tokenizer, chat, Set.copyOf(eos), bos,
          context, options.blockSize(), fileSize(folder));
      Sampler.Scratch scratch = new Sampler.Scratch(sig.vocab());
      int pad = eos.isEmpty() ? 0 : eos.iterator().next();
      DecoderModel model = new DecoderModel(OrtEnvironment.getEnvironment(), session, sig, kv, pad, scratch.logits);
      BlockPool pool = new BlockPool(blocks, options.prefixCache());
      Scheduler scheduler = new Scheduler(pool, options.blockSize(), options.maxBatchedTokens(),
          options.prefixCache(), options.schedule(), options.maxPrefillSteps());
      DecoderRunner runner = new DecoderRunner(spec, parts, model, pool, scheduler, scratch);
      warmUp(runner);
      return runner;
    } catch (RuntimeException | Error e) {
      OrtSessions.closeQuietly(session);
      tokenizer.close();
      throw e;
    }
  }

  /** ONNX Runtime's version, "" when it cannot tell. */
  public static String onnxRuntimeVersion() {
    return OrtSessions.version();
  }

  /** One short generation, so that ONNX Runtime has run both a prefill and a decode before the first request. */
  private static void warmUp(DecoderRunner runner) {
    InferenceRequest r = new InferenceRequest("warmup", List.of(Chunks.text(TextModels.TEXT_INPUT, "Hello")),
        List.of(), Map.of(TextModels.MAX_TOKENS, 2L, TextModels.TEMPERATURE, 0L, TextModels.IGNORE_EOS, true));
    try (ChunkStream s = runner.open(r)) {
      List<Tensor> chunk;
      do {
        chunk = s.next();
      } while (chunk != null);
    } catch (io.kiln.pools.InferenceException e) { // a context too short even for this: requests will say so
      LoggerFactory.getLogger(DecoderLoader.class).debug("no warm-up: {}", e.getMessage());
    }
    runner.resetCounters();
  }

  private static int maxModelLen(ModelFolder folder, DecoderOptions options, ModelSpec spec) {
    OptionalInt positions = folder.positions();
    OptionalInt tokenizerMax = folder.modelMaxLength();
    int model = Math.min(positions.orElse(Integer.MAX_VALUE), tokenizerMax.orElse(Integer.MAX_VALUE));
    if (options.maxModelLen() > 0) {
      if (model != Integer.MAX_VALUE && options.maxModelLen() > model) {
        throw new ModelLoadException("model " + spec.uri() + ": options.max_model_len " + options.maxModelLen()
            + " is more than the model takes (" + model + ", from config.json and tokenizer_config.json)");
      }
      return options.maxModelLen();
    }
    if (model == Integer.MAX_VALUE) {
      LoggerFactory.getLogger(DecoderLoader.class).warn("model {} declares no context length (config.json"
          + " max_position_embeddings, tokenizer_config.json model_max_length); its KV cache bounds it (set"
          + " options.max_model_len to be explicit)", spec.uri());
    }
    return model;
  }

  private static long fileSize(ModelFolder folder) {
    try {
      long bytes = Files.size(folder.modelFile());
      java.nio.file.Path data = folder.dir().resolve("model.onnx_data");
      return Files.isRegularFile(data) ? bytes + Files.size(data) : bytes;
    } catch (IOException e) {
      return 0;
    }
  }
}
