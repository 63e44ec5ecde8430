package io.kiln.loadtest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.kiln.loadtest.impl.CliArgs;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * A prefix cache's effect on time to first token, from outside: {@code --pairs} pairs of streamed
 * {@code /v1/completions} requests, one after the other on one connection, the two of a pair sharing a shared prefix
 * of {@code --prefix-words} words that no earlier request had (pair {@code p} is the {@link LlmWorkload} of seed
 * {@code --seed + p} with one prefix: its requests 0 and 1). The first of a pair computes the prefix's KV (cold), the
 * second should find it cached; both have unique parts of the same length. Reports each pair's two TTFTs (request sent
 * → first non-empty text chunk) and prompt tokens, their medians and the median ratio second / first.
 *
 * <p>Blocks the caller for the whole run; a request that fails (non-200, no text, no {@code [DONE]}) is counted as an
 * error and its pair is left out of the medians.
 */
public final class LlmPrefixPairs {

  static final String USAGE = """
      usage: LlmPrefixPairs --url http://127.0.0.1:8000 --model NAME [--pairs 8] [--prefix-words 508]
                            [--prompt-words 32] [--output-tokens 8] [--seed 1000] [--timeout 60s] [--out F.json]
      """;
  private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  /** One pair: each request's TTFT in ms and prompt tokens (-1: failed). */
  public record Pair(int pair, double firstMs, double secondMs, long firstPromptTokens, long secondPromptTokens) {
    boolean ok() {
      return firstMs >= 0 && secondMs >= 0;
    }
  }

  /** The run: every pair, the medians, and failed requests. */
  public record Result(List<Pair> pairs, double firstP50Ms, double secondP50Ms, double ratioP50, long errors) {
  }

  private LlmPrefixPairs() {
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
      URI url = URI.create(args.string("url", "http://127.0.0.1:8000"));
      String model = args.string("model", null);
      int pairs = args.integer("pairs", 8);
      int prefixWords = args.integer("prefix-words", 508);
      int promptWords = args.integer("prompt-words", 32);
      int outputTokens = args.integer("output-tokens", 8);
      long seed = args.longValue("seed", 1000);
      Duration timeout = args.duration("timeout", Duration.ofSeconds(60));
      String outFile = args.string("out", null);
      args.rejectUnused();
      if (model == null || pairs < 1) {
        throw new IllegalArgumentException("--model is required and --pairs must be >= 1");
      }
      LlmWorkload base = new LlmWorkload(LlmWorkload.Api.COMPLETIONS, model, promptWords, 0, outputTokens, 0, 1,
          prefixWords, seed);
      Result r = measure(url, base, pairs, timeout);
      for (Pair p : r.pairs()) {
        out.printf(Locale.ROOT, "pair %d: first %.1f ms (%d prompt tokens), second %.1f ms (%d prompt tokens)%n",
            p.pair(), p.firstMs(), p.firstPromptTokens(), p.secondMs(), p.secondPromptTokens());
      }
      out.printf(Locale.ROOT, "prefix pairs: TTFT p50 first %.1f ms, second %.1f ms, second/first %.3f, %d errors%n",
          r.firstP50Ms(), r.secondP50Ms(), r.ratioP50(), r.errors());
      if (outFile != null) {
        Path f = Path.of(outFile).toAbsolutePath();
        Files.createDirectories(f.getParent());
        Files.writeString(f, JSON.writeValueAsString(r), StandardCharsets.UTF_8);
      }
      return r.errors() == 0 ? 0 : 1;
    } catch (IllegalArgumentException e) {
      err.println("LlmPrefixPairs: " + e.getMessage());
      err.print(USAGE);
      return 2;
    } catch (IOException e) {
      err.println("LlmPrefixPairs: " + e);
      return 1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 1;
    }
  }

  /** {@code pairs} pairs against {@code url}, pair {@code p} from {@code base} with seed {@code base.seed() + p}. */
  public static Result measure(URI url, LlmWorkload base, int pairs, Duration timeout) throws InterruptedException {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(timeout).build();
    List<Pair> out = new ArrayList<>();
    long errors = 0;
    for (int p = 0; p < pairs; p++) {
      LlmWorkload w = base.withSeed(base.seed() + p);
      long[] first = once(client, url, w.request(0), timeout);
      long[] second = once(client, url, w.request(1), timeout);
      errors += (first[0] < 0 ? 1 : 0) + (second[0] < 0 ? 1 : 0);
      out.add(new Pair(p, first[0] / 1e6, second[0] / 1e6, first[1], second[1]));
    }
    double[] a = out.stream().filter(Pair::ok).mapToDouble(Pair::firstMs).toArray();
    double[] b = out.stream().filter(Pair::ok).mapToDouble(Pair::secondMs).toArray();
    double[] ratio = out.stream().filter(Pair::ok).mapToDouble(x -> x.secondMs() / x.firstMs()).toArray();
    return new Result(List.copyOf(out), median(a), median(b), median(ratio), errors);
  }

  /** Ends a stream whose body is still being read when the timeout passes (HttpClient's bounds only the headers). */
  private static final java.util.concurrent.ScheduledExecutorService WATCHDOG =
      java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "prefix-pairs-watchdog");
        t.setDaemon(true);
        return t;
      });

  /** One streamed request: {TTFT ns (-1: failed or not ended within {@code timeout}), prompt tokens}. */
  private static long[] once(HttpClient client, URI url, HttpCall call, Duration timeout) throws InterruptedException {
    HttpRequest.Builder b = HttpRequest.newBuilder(url.resolve(call.path())).timeout(timeout)
        .header("accept", "text/event-stream")
        .POST(HttpRequest.BodyPublishers.ofByteArray(call.body()));
    call.headers().forEach(b::header);
    long start = System.nanoTime();
    long first = -1;
    long promptTokens = -1;
    boolean done = false;
    try {
      HttpResponse<InputStream> resp = client.send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
      long left = timeout.toNanos() - (System.nanoTime() - start);
      var watchdog = WATCHDOG.schedule(() -> {
        try {
          resp.body().close();
        } catch (IOException ignored) { // the read fails either way, which is the point
        }
      }, Math.max(1, left), java.util.concurrent.TimeUnit.NANOSECONDS);
      try (BufferedReader in = new BufferedReader(new InputStreamReader(resp.body(), StandardCharsets.UTF_8))) {
        if (resp.statusCode() != 200) {
          return new long[] {-1, -1};
        }
        for (String line = in.readLine(); line != null; line = in.readLine()) {
          if (!line.startsWith("data:")) {
            continue;
          }
          String data = line.substring(5).trim();
          if (data.equals("[DONE]")) {
            done = true;
            continue;
          }
          JsonNode n = JSON.readTree(data);
          if (first < 0 && !n.path("choices").path(0).path("text").asText("").isEmpty()) {
            first = System.nanoTime() - start;
          }
          if (n.path("usage").path("prompt_tokens").canConvertToLong()) {
            promptTokens = n.path("usage").path("prompt_tokens").asLong();
          }
        }
      } finally {
        watchdog.cancel(false);
      }
    } catch (IOException e) {
      return new long[] {-1, -1};
    }
    return done && first >= 0 ? new long[] {first, promptTokens} : new long[] {-1, -1};
  }

  static double median(double[] v) {
    if (v.length == 0) {
      return Double.NaN;
    }
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }
}
