package io.kiln.engines.llm.impl;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.pools.ChunkStep;
import io.kiln.pools.ChunkStream;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.TextModels;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** The LLM test models ({@code models/llm}, built by {@code models/llm/fetch.sh}) and helpers to drive runners. */
public final class TestModels {

  private TestModels() {
  }

  /** A model folder of {@code models/llm}; fails (never skips) when it has not been built. */
  public static Path folder(String name) {
    Path root = Path.of("").toAbsolutePath();
    while (root != null && !Files.isDirectory(root.resolve("models/llm"))) {
      root = root.getParent();
    }
    Path dir = root == null ? Path.of("models/llm", name) : root.resolve("models/llm").resolve(name);
    assertThat(dir.resolve("model.onnx")).as("run models/llm/fetch.sh: the test model %s is missing", dir).exists();
    assertThat(dir.resolve("tokenizer.json")).as("run models/llm/fetch.sh: %s lacks tokenizer.json", dir).exists();
    return dir;
  }

  public static Path tinyGpt() {
    return folder("tiny-gpt");
  }

  public static Path miniLm() {
    return folder("all-minilm-l6-v2");
  }

  /**
   * A copy of {@code model} in {@code tmp} with some files replaced ({@code name -> content}; a
   * null content leaves the file out).
   */
  public static Path variant(Path model, Path tmp, Map<String, String> files) {
    try {
      Path dir = Files.createDirectories(tmp.resolve(model.getFileName() + "-variant"));
      try (var list = Files.list(model)) {
        for (Path f : list.toList()) {
          String name = f.getFileName().toString();
          if (!files.containsKey(name)) {
            Files.copy(f, dir.resolve(name));
          }
        }
      }
      for (Map.Entry<String, String> e : files.entrySet()) {
        if (e.getValue() != null) {
          Files.writeString(dir.resolve(e.getKey()), e.getValue());
        }
      }
      return dir;
    } catch (IOException e) {
      throw new AssertionError("cannot make a variant of " + model, e);
    }
  }

  public static JsonNode reference(Path folder) {
    Path f = folder.resolve("reference.json");
    assertThat(f).as("run models/llm/fetch.sh: %s is missing", f).exists();
    try {
      return new ObjectMapper().readTree(f.toFile());
    } catch (IOException e) {
      throw new AssertionError("cannot read " + f, e);
    }
  }

  public static int[] ints(JsonNode array) {
    int[] out = new int[array.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = array.get(i).asInt();
    }
    return out;
  }

  public static ModelSpec decoderSpec(Map<String, String> options) {
    return decoderSpec(tinyGpt(), options);
  }

  public static ModelSpec decoderSpec(Path folder, Map<String, String> options) {
    return ModelSpec.builder().uri(folder).engine("Decoder").options(options).build();
  }

  public static DecoderRunner decoder(Map<String, String> options) {
    return DecoderLoader.load(decoderSpec(options), List.of());
  }

  /** A generation request for {@code prompt} with {@code params} as request parameters (key, value, ...). */
  public static InferenceRequest request(String prompt, Object... params) {
    Map<String, Object> p = new HashMap<>();
    for (int i = 0; i < params.length; i += 2) {
      p.put((String) params[i], params[i + 1]);
    }
    return new InferenceRequest("", List.of(Tensor.ofBytes(TextModels.TEXT_INPUT, new long[] {1},
        List.of(prompt.getBytes(StandardCharsets.UTF_8)))), List.of(), p);
  }

  /** What a stream produced: its chunks' text, the finish reason, and the usage of its last chunk. */
  public record Result(String text, List<String> deltas, String finishReason, int promptTokens,
                       int completionTokens, int[] tokens) {
  }

  /** A stream being collected. */
  public static final class Collected {
    public final ChunkStream stream;
    final StringBuilder text = new StringBuilder();
    final List<String> deltas = new ArrayList<>();
    String finish = "";
    int prompt;
    int completion;
    boolean ended;

    Collected(ChunkStream stream) {
      this.stream = stream;
    }

    void add(List<Tensor> chunk) {
      Map<String, Tensor> byName = new HashMap<>();
      chunk.forEach(t -> byName.put(t.name(), t));
      String delta = string(byName.get(TextModels.TEXT_OUTPUT));
      deltas.add(delta);
      text.append(delta);
      finish = string(byName.get(TextModels.FINISH_REASON));
      prompt = int32(byName.get(TextModels.PROMPT_TOKENS));
      completion = int32(byName.get(TextModels.COMPLETION_TOKENS));
    }

    public Result result() {
      return new Result(text.toString(), deltas, finish, prompt, completion,
          ((DecoderStream) stream).generatedTokens());
    }

    public boolean ended() {
      return ended;
    }
  }

  public static String string(Tensor t) {
    assertThat(t.shape()).containsExactly(1);
    return new String(t.byteElements().get(0), StandardCharsets.UTF_8);
  }

  public static int int32(Tensor t) {
    assertThat(t.shape()).containsExactly(1);
    return ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN).getInt();
  }

  /**
   * One step over every collected stream that has not ended, as a worker does: chunks are recorded, ended streams
   * closed. Whether any stream is still open.
   */
  public static boolean step(DecoderRunner runner, List<Collected> all) {
    List<Collected> open = all.stream().filter(c -> !c.ended).toList();
    if (open.isEmpty()) {
      return false;
    }
    List<ChunkStep> steps = runner.next(open.stream().map(c -> c.stream).toList());
    for (int i = 0; i < open.size(); i++) {
      Collected c = open.get(i);
      ChunkStep s = steps.get(i);
      if (s.pending()) {
        continue;
      }
      assertThat(s.failure()).isNull();
      if (s.over()) {
        c.ended = true;
        c.stream.close();
      } else {
        assertThat(c.finish).as("a chunk after the finish reason").isEmpty();
        c.add(s.chunk());
      }
    }
    return open.stream().anyMatch(c -> !c.ended);
  }

  public static Collected open(DecoderRunner runner, InferenceRequest r) {
    return new Collected(runner.open(r));
  }

  /** Runs every request to its end together, all joining at the first step. */
  public static List<Result> runAll(DecoderRunner runner, List<InferenceRequest> requests) {
    List<Collected> all = new ArrayList<>();
    requests.forEach(r -> all.add(open(runner, r)));
    int guard = 0;
    while (step(runner, all)) {
      assertThat(++guard).as("steps").isLessThan(100_000);
    }
    return all.stream().map(Collected::result).toList();
  }

  public static Result runOne(DecoderRunner runner, InferenceRequest request) {
    return runAll(runner, List.of(request)).get(0);
  }
}
