package io.kiln.loadtest;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.kiln.loadtest.impl.CliArgs;
import io.kiln.pools.ChunkStep;
import io.kiln.pools.ChunkStream;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.StreamingModelRunner;
import io.kiln.pools.Tensor;
import io.kiln.pools.TextModels;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;
import org.HdrHistogram.Histogram;

/**
 * The limit of {@code /v1/completions}' figures: the same decoder, engine options, threads and prompts driven
 * without HTTP, by {@code N} closed-loop clients on one thread that steps the runner as a Kiln worker does (every open
 * sequence advanced by one {@link StreamingModelRunner#next(List)} call per step, at most {@code max_batch_size} of
 * them; a client whose sequence ended opens its next request before the next step). Requests are
 * {@link LlmWorkload#completionPrompt(long)} with {@code max_tokens} and {@code ignore_eos}, as the gateway turns the
 * workload's JSON into the contract's parameters; request {@code i} is the workload's {@code i}-th, as LoadGen sends
 * it.
 *
 * <p>Counts like LoadGen's closed-loop LLM runs: the requests opened after the warm-up and before its end, their
 * output tokens (the last chunk's {@code completion_tokens}) over the time from the warm-up's end to the last one's end,
 * and their time to first token (from {@code open} to the end of the first step that gave them a chunk). Blocks its
 * caller for the model load, warm-up, duration and the last requests' ends; not thread-safe.
 */
public final class LlmInProcess {

  static final String USAGE = """
      usage: LlmInProcess --model-dir DIR [--streams 16] [--max-batch-size 16] [--intra-op 1] [--inter-op 1]
                          [--option NAME=VALUE,...] [--prompt-words 128] [--prompt-stddev 0] [--output-tokens 64]
                          [--output-stddev 0] [--prefixes 0]
                          [--prefix-words 256] [--seed 42] [--warmup 5s] [--duration 10s] [--clock wall]
                          [--name NAME] [--out F.json]
        the Decoder engine on DIR, driven by --streams closed-loop clients without HTTP; prints one summary line and
        writes {name, llm: {outputTokensPerSecond, requests, outputTokens, ttftMs: {p50, p90, p99}, itlMs: {p50,
        p99}, cpuSeconds, outputTokensPerCpuSecond, ttftCpuMs: {p50, p99}, itlCpuMs: {p50, p99}}, errors} to
        --out (the *Cpu* figures count the stepping thread's CPU time, not wall-clock time); --clock cpu counts every
        time (warm-up, duration, TTFT, ITL, tokens/s) in that CPU time: figures a loaded machine does not stretch
      """;
  private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  /**
   * What a run measured.
   *
   * @param cpuSeconds the stepping thread's CPU time over the same span as {@code seconds} (ONNX Runtime computes on
   *     it with one intra-op thread), NaN where the JVM does not measure thread CPU time; with {@code outputTokens},
   *     a rate that other processes on the core change far less than the wall-clock one
   * @param itlP50Ms the median gap between consecutive tokens of the measured requests (NaN: none had two)
   * @param ttftCpuP50Ms TTFT p50 counted in the stepping thread's CPU time instead of wall-clock time: the engine's
   *     work a first token waited for, which other processes on the core do not stretch (NaN: not measured); so
   *     {@code itlCpuP50Ms}
   */
  public record Result(String name, int streams, long requests, long outputTokens, double seconds,
                       double outputTokensPerSecond, double ttftP50Ms, double ttftP90Ms, double ttftP99Ms,
                       long steps, long errors, double cpuSeconds, double itlP50Ms, double itlP99Ms,
                       double ttftCpuP50Ms, double ttftCpuP99Ms, double itlCpuP50Ms, double itlCpuP99Ms) {

    public double outputTokensPerCpuSecond() {
      return outputTokens / Math.max(1e-9, cpuSeconds);
    }
  }

  private LlmInProcess() {
  }

  public static void main(String[] argv) {
    System.exit(run(argv, System.out, System.err));
  }

  static int run(String[] argv, PrintStream out, PrintStream err) {
    try {
      CliArgs args = CliArgs.parse(argv, Set.of("help"));
      if (args.flag("help")) {
        out.print(USAGE);
        return 0;
      }
      Path dir = Path.of(args.string("model-dir", "models/llm/bench-gpt"));
      Map<String, String> options = options(args.string("option", ""));
      ModelSpec spec = ModelSpec.builder().uri(dir).engine("Decoder").options(options)
          .intraOpThreads(args.integer("intra-op", 1)).interOpThreads(args.integer("inter-op", 1)).build();
      LlmWorkload workload = new LlmWorkload(LlmWorkload.Api.COMPLETIONS, "in-process",
          args.doubleValue("prompt-words", LlmWorkload.DEFAULT_PROMPT_WORDS), args.doubleValue("prompt-stddev", 0),
          args.doubleValue("output-tokens", LlmWorkload.DEFAULT_OUTPUT_TOKENS), args.doubleValue("output-stddev", 0),
          args.integer("prefixes", 0),
          args.integer("prefix-words", LlmWorkload.DEFAULT_PREFIX_WORDS), args.longValue("seed", LlmWorkload.DEFAULT_SEED));
      int streams = args.integer("streams", 16);
      int maxBatch = args.integer("max-batch-size", 16);
      Duration warmup = args.duration("warmup", Duration.ofSeconds(5));
      Duration duration = args.duration("duration", Duration.ofSeconds(10));
      String name = args.string("name", "inprocess-c" + streams);
      String outFile = args.string("out", null);
      String clockName = args.string("clock", "wall");
      args.rejectUnused();
      ThreadMXBean threads = ManagementFactory.getThreadMXBean();
      LongSupplier clock = switch (clockName) {
        case "wall" -> System::nanoTime;
        // drive() runs on this thread, so its CPU time is the stepping thread's
        case "cpu" -> threads::getCurrentThreadCpuTime;
        default -> throw new IllegalArgumentException("--clock: wall or cpu, got '" + clockName + "'");
      };
      if (clockName.equals("cpu") && !(threads.isCurrentThreadCpuTimeSupported() && threads.isThreadCpuTimeEnabled())) {
        throw new IllegalArgumentException("--clock cpu: this JVM does not measure thread CPU time");
      }
      if (streams < 1 || maxBatch < 1) {
        throw new IllegalArgumentException("--streams and --max-batch-size must be >= 1");
      }
      ModelRunner loaded = ModelRunners.load(spec, List.of());
      if (!(loaded instanceof StreamingModelRunner runner)) {
        loaded.close();
        throw new IllegalArgumentException(dir + " did not load as a streaming (generative) model");
      }
      Result r;
      try {
        r = drive(runner, workload, name, streams, maxBatch, warmup, duration, clock);
      } finally {
        runner.close();
      }
      out.printf(Locale.ROOT, "%s: %d streams, %d requests, %d output tokens in %.1f s = %.1f tokens/s (%.1f per CPU"
              + " second of the stepping thread), TTFT p50 %.1f ms p99 %.1f ms (CPU p50 %.1f ms), ITL p50 %.1f ms"
              + " (CPU %.1f ms), %d steps, %d errors%n", r.name(), r.streams(), r.requests(), r.outputTokens(),
          r.seconds(), r.outputTokensPerSecond(), r.outputTokensPerCpuSecond(), r.ttftP50Ms(), r.ttftP99Ms(),
          r.ttftCpuP50Ms(), r.itlP50Ms(), r.itlCpuP50Ms(), r.steps(), r.errors());
      if (outFile != null) {
        write(r, Path.of(outFile));
      }
      return r.errors() == 0 ? 0 : 1;
    } catch (IllegalArgumentException e) {
      err.println("LlmInProcess: " + e.getMessage());
      err.print(USAGE);
      return 2;
    } catch (IOException | RuntimeException e) {
      err.println("LlmInProcess: " + e);
      return 1;
    }
  }

  /** {@code a=1,b=2} as a map (empty string: none). */
  static Map<String, String> options(String s) {
    Map<String, String> m = new LinkedHashMap<>();
    for (String kv : s.split(",")) {
      if (kv.isBlank()) {
        continue;
      }
      int eq = kv.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("--option: NAME=VALUE expected, got '" + kv + "'");
      }
      m.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
    }
    return m;
  }

  /** One client's sequence in flight. */
  private static final class Client {
    ChunkStream stream;
    long openedNs;
    long firstNs;
    long lastNs;
    long openedCpu;
    long lastCpu;
    long tokens;
  }

  /**
   * Runs the closed loop on this thread: clients open requests until warm-up + duration have passed on
   * {@code nanoClock}, then the open ones run to their end. As LoadGen counts a closed-loop run: the measured requests
   * are those opened after the warm-up, the rate is their tokens over the time from the warm-up's end to the last
   * one's end.
   *
   * @throws RuntimeException when the engine fails (as a worker would)
   */
  public static Result drive(StreamingModelRunner runner, LlmWorkload workload, String name, int streams, int maxBatch,
                             Duration warmup, Duration duration, LongSupplier nanoClock) {
    long start = nanoClock.getAsLong();
    long measureFrom = start + warmup.toNanos();
    long end = measureFrom + duration.toNanos();
    Histogram ttft = new Histogram(3_600_000_000L, 3);
    Histogram itl = new Histogram(3_600_000_000L, 3);
    Histogram ttftCpu = new Histogram(3_600_000_000L, 3);
    Histogram itlCpu = new Histogram(3_600_000_000L, 3);
    long next = 0;
    long requests = 0;
    long tokens = 0;
    long steps = 0;
    long errors = 0;
    long lastEnd = measureFrom;
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    boolean cpuTimed = threads.isCurrentThreadCpuTimeSupported() && threads.isThreadCpuTimeEnabled();
    long cpuFrom = -1;
    long cpuAtLastEnd = -1;
    List<Client> waiting = new ArrayList<>();
    List<Client> open = new ArrayList<>();
    for (int i = 0; i < streams; i++) {
      waiting.add(new Client());
    }
    try {
      while (true) {
        long now = nanoClock.getAsLong();
        while (now < end && open.size() < maxBatch && !waiting.isEmpty()) {
          Client c = waiting.remove(waiting.size() - 1);
          c.openedNs = now;
          c.openedCpu = cpuTimed ? threads.getCurrentThreadCpuTime() : 0;
          c.firstNs = 0;
          c.tokens = 0;
          c.stream = runner.open(request(workload, next++));
          open.add(c);
        }
        if (open.isEmpty()) {
          break;
        }
        if (cpuTimed && cpuFrom < 0 && now - measureFrom >= 0) {
          cpuFrom = threads.getCurrentThreadCpuTime();
        }
        List<ChunkStep> out = runner.next(open.stream().map(c -> c.stream).toList());
        steps++;
        now = nanoClock.getAsLong();
        long cpuNow = cpuTimed ? threads.getCurrentThreadCpuTime() : 0;
        for (int i = open.size() - 1; i >= 0; i--) {
          Client c = open.get(i);
          ChunkStep s = out.get(i);
          if (s.pending()) {
            continue;
          }
          if (!s.over()) {
            if (c.firstNs == 0) {
              c.firstNs = now;
              if (cpuTimed && c.openedNs >= measureFrom) {
                ttftCpu.recordValue(Math.max(1, (cpuNow - c.openedCpu) / 1_000));
              }
            } else if (c.openedNs >= measureFrom) {
              itl.recordValue(Math.max(1, (now - c.lastNs) / 1_000));
              if (cpuTimed) {
                itlCpu.recordValue(Math.max(1, (cpuNow - c.lastCpu) / 1_000));
              }
            }
            c.lastNs = now;
            c.lastCpu = cpuNow;
            c.tokens = completionTokens(s.chunk(), c.tokens);
            continue;
          }
          c.stream.close();
          open.remove(i);
          waiting.add(c);
          if (c.openedNs >= measureFrom) {
            if (now > lastEnd) {
              lastEnd = now;
              cpuAtLastEnd = cpuTimed ? threads.getCurrentThreadCpuTime() : -1;
            }
            if (s.failure() != null || c.firstNs == 0) {
              errors++;
            } else {
              requests++;
              tokens += c.tokens;
              ttft.recordValue(Math.max(1, (c.firstNs - c.openedNs) / 1_000));
            }
          }
        }
      }
    } finally {
      open.forEach(c -> c.stream.close());
    }
    double seconds = Math.max(1e-9, (lastEnd - measureFrom) / 1e9);
    double cpuSeconds = cpuFrom >= 0 && cpuAtLastEnd >= cpuFrom ? (cpuAtLastEnd - cpuFrom) / 1e9 : Double.NaN;
    return new Result(name, streams, requests, tokens, seconds, tokens / seconds,
        ttft.getValueAtPercentile(50) / 1e3, ttft.getValueAtPercentile(90) / 1e3, ttft.getValueAtPercentile(99) / 1e3,
        steps, errors, cpuSeconds, ms(itl, 50), ms(itl, 99), ms(ttftCpu, 50), ms(ttftCpu, 99), ms(itlCpu, 50),
        ms(itlCpu, 99));
  }

  private static double ms(Histogram h, double percentile) {
    return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(percentile) / 1e3;
  }

  /** Request {@code index} as the gateway hands a {@code /v1/completions} body of the workload to the model. */
  static InferenceRequest request(LlmWorkload workload, long index) {
    Map<String, Object> p = new LinkedHashMap<>();
    p.put(TextModels.MAX_TOKENS, (long) workload.shape(index).maxTokens());
    p.put(TextModels.IGNORE_EOS, true);
    byte[] prompt = workload.completionPrompt(index).getBytes(StandardCharsets.UTF_8);
    return new InferenceRequest("", List.of(Tensor.ofBytes(TextModels.TEXT_INPUT, new long[] {1}, List.of(prompt))),
        List.of(), p);
  }

  private static long completionTokens(List<Tensor> chunk, long previous) {
    for (Tensor t : chunk) {
      if (t.name().equals(TextModels.COMPLETION_TOKENS) && t.data().length >= 4) {
        return ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN).getInt();
      }
    }
    return previous + 1;
  }

  private static void write(Result r, Path file) throws IOException {
    Map<String, Object> llm = new LinkedHashMap<>();
    llm.put("requests", r.requests());
    llm.put("outputTokens", r.outputTokens());
    llm.put("outputTokensPerSecond", r.outputTokensPerSecond());
    if (!Double.isNaN(r.cpuSeconds())) {
      llm.put("cpuSeconds", r.cpuSeconds());
      llm.put("outputTokensPerCpuSecond", r.outputTokensPerCpuSecond());
    }
    if (!Double.isNaN(r.ttftCpuP50Ms())) {
      llm.put("ttftCpuMs", Map.of("p50", r.ttftCpuP50Ms(), "p99", r.ttftCpuP99Ms()));
    }
    if (!Double.isNaN(r.itlCpuP50Ms())) {
      llm.put("itlCpuMs", Map.of("p50", r.itlCpuP50Ms(), "p99", r.itlCpuP99Ms()));
    }
    llm.put("ttftMs", Map.of("p50", r.ttftP50Ms(), "p90", r.ttftP90Ms(), "p99", r.ttftP99Ms()));
    if (!Double.isNaN(r.itlP50Ms())) {
      llm.put("itlMs", Map.of("p50", r.itlP50Ms(), "p99", r.itlP99Ms()));
    }
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("name", r.name());
    m.put("kind", "in-process");
    m.put("streams", r.streams());
    m.put("seconds", r.seconds());
    m.put("steps", r.steps());
    m.put("errors", r.errors());
    m.put("llm", llm);
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Files.writeString(file, JSON.writeValueAsString(m), StandardCharsets.UTF_8);
  }
}
