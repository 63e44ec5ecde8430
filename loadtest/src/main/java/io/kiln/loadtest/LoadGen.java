package io.kiln.loadtest;

import io.kiln.loadtest.impl.CliArgs;
import io.kiln.loadtest.impl.FlatWarmUp;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The load generator's command line. Run {@code LoadGen --help} for usage. {@link #run} returns the exit
 * code: 0 done, 1 failed (I/O, unencodable request), 2 bad arguments.
 */
public final class LoadGen {
  static final String USAGE = """
      usage: LoadGen [options]                         one load test
             LoadGen --search --p99-target-ms MS [options]  find the highest rate with p99 under MS
             LoadGen compare --baseline NAME --out FILE.html [--title T] [--limits RUN=LIMIT,...]
                             [--links FILE.html,...] RUN.json...
                                               runs side by side; --limits adds each run's ratios to its own
                                               limits (a run may have several); every run's own report and
                                               --links are linked
             LoadGen wait --url URL [--path /v2/health/ready] [--timeout 120s]   until GET answers 200
             LoadGen warm [--round 5s] [--max-rounds 8] [--flat-pct 3] [--record FILE] [options]
                                               rounds of the load in one JVM until two consecutive rounds'
                                               req/s differ by < flat-pct %; --warmup precedes round 1 only;
                                               --record writes the rounds ('round N RPS', 'flat yes|no')

      target and request
        --url URL[,URL...]      default http://127.0.0.1:8000 (8001 for grpc); several (HTTP): request i goes
                                to the (i mod n)-th, each with its own --connections (a cluster's gateways)
        --protocol P            http-json (default) | http-binary | grpc
        --model NAME            default mlp; requests go to /v2/models/NAME/infer
        --request FILE          an OIP v2 JSON request body
        --shape 1x64            a generated FP32 tensor of this shape (default 1x64)
        --input-name NAME       name of the generated tensor (default input)
        --mix FILE              weighted requests, lines of 'WEIGHT FILE|fp32:SHAPE'
      LLM (OpenAI API, streamed; lengths in words, a word ~ a token)
        --llm completions|chat  POST /v1/completions or /v1/chat/completions with stream: true; reports time to
                                first token, inter-token latency, output tokens/s (--model names the model)
        --prompt-words N        mean prompt length (default 128) [--prompt-stddev S, default 0: fixed]
        --output-tokens N       max_tokens, sent with ignore_eos: true (default 64) [--output-stddev S]
        --prefixes N            N distinct shared prefixes (chat: the system message), one per request (default 0)
        --prefix-words L        words per shared prefix (default 256)
        --seed N                the workload's seed (default 42): the same seed sends the same requests
        --no-stream             stream: false: one JSON answer per request (its TTFT is its whole latency)
      load
        --mode open|closed      open: constant arrival rate; closed: N connections, 1 request each (default closed)
        --rate R                open loop arrivals per second (default 100)
        --connections N         connection pool size (default 16)
        --warmup D              not recorded (default 5s; open loop ramps 10%->100% of the rate);
                                durations like 500ms, 10s, 1m
        --duration D            measured (default 10s)
        --max-requests N        stop after N measured requests
        --timeout D             per request (default 10s)
        --max-in-flight N       open loop: outstanding requests before the generator holds back (default 4096)
        --event-loops N         generator event loops (default cores/2)
      search (open loop at increasing rates, doubling then bisecting)
        --search --p99-target-ms MS [--max-error-ratio 0.001] [--start-rate 100] [--max-rate 1e6]
        [--max-steps 12] [--precision 0.05]
      output
        --name NAME             run name (default from the output file, else 'run')
        --out results/NAME.json JSON summary; the HTML report is written beside it (.html)
        --quiet                 no progress lines
      """;

  private LoadGen() {
  }

  public static void main(String[] args) {
    System.exit(run(args, System.out, System.err));
  }

  /** Runs the command line; blocks until the test ends. */
  public static int run(String[] argv, PrintStream out, PrintStream err) {
    CliArgs args;
    try {
      args = CliArgs.parse(argv, Set.of("search", "quiet", "help", "no-stream"));
      if (args.flag("help")) {
        out.print(USAGE);
        return 0;
      }
      if (!args.positional().isEmpty() && args.positional().get(0).equals("compare")) {
        return compare(args, out);
      }
      if (!args.positional().isEmpty() && args.positional().get(0).equals("wait")) {
        return waitReady(args, err);
      }
      if (!args.positional().isEmpty() && args.positional().get(0).equals("warm")) {
        return warm(args, out, err);
      }
      if (!args.positional().isEmpty()) {
        throw new IllegalArgumentException("unexpected argument '" + args.positional().get(0) + "'");
      }
      return load(args, out, err);
    } catch (IllegalArgumentException e) {
      err.println("error: " + e.getMessage());
      err.println("run with --help for usage");
      return 2;
    } catch (IOException | IllegalStateException e) {
      err.println("failed: " + e.getMessage());
      return 1;
    }
  }

  private static int load(CliArgs args, PrintStream out, PrintStream err) throws IOException {
    Path outFile = args.has("out") ? Path.of(args.string("out", null)) : null;
    String defaultName = outFile == null ? "run" : Reports.htmlBeside(outFile).getFileName().toString().replaceFirst("\\.html$", "");
    LoadOptions.Builder b = loadOptions(args, defaultName);
    int eventLoops = args.integer("event-loops", LoadRunner.defaultEventLoops());
    boolean search = args.flag("search");
    MaxThroughputSearch.Options searchOptions = null;
    if (search) {
      if (!args.has("p99-target-ms")) {
        throw new IllegalArgumentException("--search needs --p99-target-ms");
      }
      searchOptions = new MaxThroughputSearch.Options(args.doubleValue("p99-target-ms", 0),
          args.doubleValue("max-error-ratio", MaxThroughputSearch.Options.DEFAULT_MAX_ERROR_RATIO),
          args.doubleValue("start-rate", MaxThroughputSearch.Options.DEFAULT_START_RATE),
          args.doubleValue("max-rate", MaxThroughputSearch.Options.DEFAULT_MAX_RATE),
          args.integer("max-steps", MaxThroughputSearch.Options.DEFAULT_MAX_STEPS),
          args.doubleValue("precision", MaxThroughputSearch.Options.DEFAULT_PRECISION));
    }
    ProgressListener progress = args.flag("quiet") ? ProgressListener.NONE : ProgressListener.printingTo(err);
    args.rejectUnused();
    LoadOptions options = b.build();

    try (LoadRunner runner = LoadRunner.create(eventLoops)) {
      if (search) {
        MaxThroughputSearch.Result r = new MaxThroughputSearch(runner).search(options, searchOptions, progress,
            step -> out.printf(Locale.ROOT, "step %d: %.1f req/s -> %s (%s)%n", step.step(), step.rate(),
                step.passed() ? "pass" : "FAIL", step.reason()));
        out.printf(Locale.ROOT, "highest passing rate: %.1f req/s (%s)%n", r.bestRate(), r.stoppedBecause());
        if (outFile != null) {
          Reports.writeJson(r, outFile);
          Reports.writeHtml(r, Reports.htmlBeside(outFile));
          out.println("wrote " + outFile + " and " + Reports.htmlBeside(outFile));
        }
      } else {
        RunResult r = runner.run(options, progress);
        printSummary(r, out);
        if (outFile != null) {
          Reports.writeJson(r, outFile);
          Reports.writeHtml(r, Reports.htmlBeside(outFile));
          out.println("wrote " + outFile + " and " + Reports.htmlBeside(outFile));
        }
      }
    }
    return 0;
  }

  /** The target, request and load options every load-running command shares. */
  private static LoadOptions.Builder loadOptions(CliArgs args, String defaultName) throws IOException {
    Protocol protocol = Protocol.parse(args.string("protocol", "http-json"));
    LoadOptions.Builder b = LoadOptions.builder()
        .name(args.string("name", defaultName))
        .protocol(protocol)
        .model(args.string("model", LoadOptions.DEFAULT_MODEL))
        .mode(LoadMode.parse(args.string("mode", "closed")))
        .rate(args.doubleValue("rate", LoadOptions.DEFAULT_RATE))
        .connections(args.integer("connections", LoadOptions.DEFAULT_CONNECTIONS))
        .warmup(args.duration("warmup", LoadOptions.DEFAULT_WARMUP))
        .duration(args.duration("duration", LoadOptions.DEFAULT_DURATION))
        .maxRequests(args.longValue("max-requests", Long.MAX_VALUE))
        .requestTimeout(args.duration("timeout", LoadOptions.DEFAULT_REQUEST_TIMEOUT))
        .maxInFlight(args.integer("max-in-flight", LoadOptions.DEFAULT_MAX_IN_FLIGHT));
    if (args.has("url")) {
      b.targets(java.util.Arrays.stream(args.string("url", null).split(",")).map(String::trim)
          .filter(u -> !u.isEmpty()).map(URI::create).toList());
    }
    if (args.has("llm")) {
      b.source(new LlmWorkload(LlmWorkload.Api.parse(args.string("llm", null)),
          args.string("model", LoadOptions.DEFAULT_MODEL),
          args.doubleValue("prompt-words", LlmWorkload.DEFAULT_PROMPT_WORDS), args.doubleValue("prompt-stddev", 0),
          args.doubleValue("output-tokens", LlmWorkload.DEFAULT_OUTPUT_TOKENS), args.doubleValue("output-stddev", 0),
          args.integer("prefixes", 0), args.integer("prefix-words", LlmWorkload.DEFAULT_PREFIX_WORDS),
          args.longValue("seed", LlmWorkload.DEFAULT_SEED), !args.flag("no-stream")));
      if (args.has("request") || args.has("shape") || args.has("mix")) {
        throw new IllegalArgumentException("--llm makes its own requests: drop --request, --shape and --mix");
      }
      return b;
    }
    b.mix(mix(args));
    return b;
  }

  /**
   * Rounds of load in one JVM (so the client stays warm) until two consecutive rounds' req/s differ by less
   * than {@code --flat-pct}; the first round is preceded by {@code --warmup}, the others are not.
   */
  private static int warm(CliArgs args, PrintStream out, PrintStream err) throws IOException {
    if (args.positional().size() != 1) {
      throw new IllegalArgumentException("warm takes no arguments besides options");
    }
    LoadOptions.Builder b = loadOptions(args, "warm");
    int eventLoops = args.integer("event-loops", LoadRunner.defaultEventLoops());
    java.time.Duration round = args.duration("round", java.time.Duration.ofSeconds(5));
    int maxRounds = args.integer("max-rounds", 8);
    double percent = args.doubleValue("flat-pct", 3);
    Path record = args.has("record") ? Path.of(args.string("record", null)) : null;
    ProgressListener progress = args.flag("quiet") ? ProgressListener.NONE : ProgressListener.printingTo(err);
    args.rejectUnused();
    LoadOptions first = b.duration(round).build();
    LoadOptions next = first.toBuilder().warmup(java.time.Duration.ZERO).build();
    FlatWarmUp.Result result;
    try (LoadRunner runner = LoadRunner.create(eventLoops)) {
      result = FlatWarmUp.run(maxRounds, percent, i -> {
        RunResult r = runner.run(i == 1 ? first : next, progress);
        out.printf(Locale.ROOT, "round %d: %.1f req/s (errors %d)%n", i, r.achievedRps(), r.errors());
        return r.achievedRps();
      });
    }
    out.printf(Locale.ROOT, "%s after %d rounds%n", result.flat() ? "flat" : "not flat", result.rounds().size());
    if (record != null) {
      Files.writeString(record, result.record());
    }
    return 0;
  }

  private static RequestMix mix(CliArgs args) throws IOException {
    int sources = (args.has("mix") ? 1 : 0) + (args.has("request") ? 1 : 0) + (args.has("shape") ? 1 : 0);
    if (sources > 1) {
      throw new IllegalArgumentException("give at most one of --mix, --request, --shape");
    }
    String inputName = args.string("input-name", RequestMix.DEFAULT_INPUT_NAME);
    if (args.has("mix")) {
      return RequestMix.fromFile(Path.of(args.string("mix", null)));
    }
    if (args.has("request")) {
      return RequestMix.single(RequestTemplate.fromJsonFile(Path.of(args.string("request", null))));
    }
    long[] shape = RequestMix.parseShape(args.string("shape", LoadOptions.DEFAULT_REQUEST.substring(5)));
    return RequestMix.single(RequestTemplate.generatedFp32(inputName, shape, 42));
  }

  private static int compare(CliArgs args, PrintStream out) throws IOException {
    List<String> files = args.positional().subList(1, args.positional().size());
    if (files.isEmpty() || !args.has("baseline") || !args.has("out")) {
      throw new IllegalArgumentException("compare needs --baseline NAME --out FILE.html and at least one RUN.json");
    }
    String baseline = args.string("baseline", null);
    Path outFile = Path.of(args.string("out", null));
    String title = args.string("title", "Scenario comparison");
    Map<String, List<String>> limitsOf = new LinkedHashMap<>();
    for (String pair : list(args.string("limits", ""))) {
      int eq = pair.indexOf('=');
      if (eq <= 0 || eq == pair.length() - 1) {
        throw new IllegalArgumentException("--limits: expected RUN=LIMIT pairs separated by commas, got '" + pair + "'");
      }
      limitsOf.computeIfAbsent(pair.substring(0, eq), k -> new ArrayList<>()).add(pair.substring(eq + 1));
    }
    List<String> extraLinks = list(args.string("links", ""));
    args.rejectUnused();
    Path folder = outFile.toAbsolutePath().getParent();
    List<RunResult> runs = new ArrayList<>();
    Map<String, String> links = new LinkedHashMap<>();
    for (String f : files) {
      RunResult r = Reports.readJson(Path.of(f));
      runs.add(r);
      Path html = Reports.htmlBeside(Path.of(f)).toAbsolutePath();
      if (Files.isRegularFile(html)) {
        links.put("run " + r.name(), folder.relativize(html).toString());
      }
    }
    for (String l : extraLinks) {
      Path p = Path.of(l).toAbsolutePath();
      links.put(p.getFileName().toString(), folder.relativize(p).toString());
    }
    Reports.ComparisonExtras extras = new Reports.ComparisonExtras(limitsOf, links);
    Reports.writeComparisonHtml(title, runs, baseline, extras, outFile);
    for (Reports.ComparisonRow row : Reports.compare(runs, baseline)) {
      out.printf(Locale.ROOT, "%-24s %12.1f req/s (%5.2fx)  p50 %9.3f ms (%5.2fx)  p99 %9.3f ms (%5.2fx)%n",
          row.run().name(), row.run().achievedRps(), row.throughputRatio(), row.run().latencyMs().p50(), row.p50Ratio(),
          row.run().latencyMs().p99(), row.p99Ratio());
    }
    for (Reports.LimitRow row : Reports.limits(runs, limitsOf)) {
      out.printf(Locale.ROOT, "%-24s / %-20s throughput %5sx  p50 %5.2fx  p99 %5.2fx%n", row.run().name(),
          row.limit().name(), io.kiln.loadtest.impl.Html.ratioNumber(row.throughputRatio()), row.p50Ratio(),
          row.p99Ratio());
    }
    out.println("wrote " + outFile);
    return 0;
  }

  private static List<String> list(String csv) {
    List<String> out = new ArrayList<>();
    for (String s : csv.split(",")) {
      if (!s.isBlank()) {
        out.add(s.trim());
      }
    }
    return out;
  }

  /** Polls {@code GET url+path} every 250 ms until it answers 200 (exit 0) or the timeout passes (exit 1). */
  private static int waitReady(CliArgs args, PrintStream err) {
    URI uri = URI.create(args.string("url", LoadOptions.DEFAULT_HTTP_TARGET.toString()) + args.string("path", "/v2/health/ready"));
    java.time.Duration timeout = args.duration("timeout", java.time.Duration.ofSeconds(120));
    args.rejectUnused();
    if (args.positional().size() != 1) {
      throw new IllegalArgumentException("wait takes no arguments besides options");
    }
    java.net.http.HttpClient client = java.net.http.HttpClient.newBuilder()
        .connectTimeout(java.time.Duration.ofSeconds(2)).build();
    long deadline = System.nanoTime() + timeout.toNanos();
    String last = "no answer";
    while (System.nanoTime() - deadline < 0) {
      try {
        int status = client.send(java.net.http.HttpRequest.newBuilder(uri).timeout(java.time.Duration.ofSeconds(2)).GET()
            .build(), java.net.http.HttpResponse.BodyHandlers.discarding()).statusCode();
        if (status == 200) {
          return 0;
        }
        last = "HTTP " + status;
      } catch (IOException e) {
        last = e.toString();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return 1;
      }
      java.util.concurrent.locks.LockSupport.parkNanos(250_000_000L);
    }
    err.println("not ready after " + timeout.toSeconds() + " s: " + uri + " (" + last + ")");
    return 1;
  }

  static void printSummary(RunResult r, PrintStream out) {
    RunResult.Latency l = r.latencyMs();
    out.printf(Locale.ROOT, "%s: %d requests in %.2f s = %.1f req/s (ok %.1f/s)%s%n", r.name(), r.requests(),
        r.measuredSeconds(), r.achievedRps(), r.okRps(),
        r.offeredRps() == null ? "" : String.format(Locale.ROOT, ", offered %.1f/s", r.offeredRps()));
    out.printf(Locale.ROOT, "latency (ms, from %s): p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f%n",
        "intended".equals(r.latencyFrom()) ? "intended send time" : "actual send", l.p50(), l.p90(), l.p99(), l.p999(), l.max());
    out.println("outcomes: " + r.outcomes());
    RunResult.Llm llm = r.llm();
    if (llm != null) {
      out.printf(Locale.ROOT, "llm (%s): %d ok streams, %d output tokens (mean %.1f) = %.1f tokens/s, %.2f req/s%n",
          llm.api(), llm.requests(), llm.outputTokens(), llm.meanOutputTokens(), llm.outputTokensPerSecond(),
          llm.requestsPerSecond());
      for (Object[] row : new Object[][] {{"ttft", llm.ttftMs()}, {"itl ", llm.itlMs()}, {"e2e ", llm.e2eMs()}}) {
        RunResult.Latency x = (RunResult.Latency) row[1];
        out.printf(Locale.ROOT, "  %s (ms): p50 %.3f  p90 %.3f  p99 %.3f  mean %.3f  max %.3f  (n %d)%n", row[0],
            x.p50(), x.p90(), x.p99(), x.mean(), x.max(), x.count());
      }
    }
  }
}
