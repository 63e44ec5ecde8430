package io.kiln.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Prometheus text exposition, read into samples: the tests' one scraper ({@link #scrape}) and reader. A sample line
 * is {@code name{label="value",...} value [timestamp]}; comments and blank lines are skipped; label values are
 * unescaped ({@code \\}, {@code \"}, {@code \n}).
 */
public final class PromText {

  /** One sample. */
  public record Sample(String name, Map<String, String> labels, double value) {
    /** Whether every one of {@code wanted} is among this sample's labels. */
    public boolean has(Map<String, String> wanted) {
      return labels.entrySet().containsAll(wanted.entrySet());
    }
  }

  private static final Pattern SAMPLE =
      Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)})?\\s+(\\S+)(?:\\s+-?\\d+)?$");
  private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");
  private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  private final String text;
  private final List<Sample> samples;

  private PromText(String text, List<Sample> samples) {
    this.text = text;
    this.samples = samples;
  }

  /** Reads exposition text. */
  public static PromText parse(String text) {
    List<Sample> out = new ArrayList<>();
    for (String line : text.split("\n")) {
      String l = line.trim();
      if (l.isEmpty() || l.startsWith("#")) {
        continue;
      }
      Matcher m = SAMPLE.matcher(l);
      if (!m.matches()) {
        throw new IllegalArgumentException("not a Prometheus sample line: " + line);
      }
      Map<String, String> labels = new LinkedHashMap<>();
      if (m.group(2) != null) {
        Matcher lm = LABEL.matcher(m.group(2));
        while (lm.find()) {
          labels.put(lm.group(1), unescape(lm.group(2)));
        }
      }
      out.add(new Sample(m.group(1), Map.copyOf(labels), value(m.group(3))));
    }
    return new PromText(text, List.copyOf(out));
  }

  /** GETs {@code http://host:port/metrics} (200 expected) and reads it. */
  public static PromText scrape(String host, int port) {
    return parse(get(URI.create("http://" + host + ":" + port + "/metrics")));
  }

  /** GETs {@code http://127.0.0.1:port/metrics} and reads it. */
  public static PromText scrape(int port) {
    return scrape("127.0.0.1", port);
  }

  /** The text as it came. */
  public String text() {
    return text;
  }

  public List<Sample> samples() {
    return samples;
  }

  /** The samples of {@code name} whose labels include {@code labels}. */
  public List<Sample> samples(String name, Map<String, String> labels) {
    return samples.stream().filter(s -> s.name().equals(name) && s.has(labels)).toList();
  }

  /** The sum of the samples of {@code name} whose labels include {@code labels}; -1 if there is none. */
  public double sum(String name, Map<String, String> labels) {
    List<Sample> found = samples(name, labels);
    return found.isEmpty() ? -1 : found.stream().mapToDouble(Sample::value).sum();
  }

  /** {@link #sum(String, Map)} over every series of {@code name}. */
  public double sum(String name) {
    return sum(name, Map.of());
  }

  /** Whether any sample of {@code name} is present. */
  public boolean has(String name) {
    return samples.stream().anyMatch(s -> s.name().equals(name));
  }

  private static double value(String v) {
    return switch (v) {
      case "+Inf" -> Double.POSITIVE_INFINITY;
      case "-Inf" -> Double.NEGATIVE_INFINITY;
      case "NaN" -> Double.NaN;
      default -> Double.parseDouble(v);
    };
  }

  private static String unescape(String v) {
    return v.replace("\\n", "\n").replace("\\\"", "\"").replace("\\\\", "\\");
  }

  private static String get(URI uri) {
    try {
      HttpResponse<String> r = CLIENT.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30)).GET().build(),
          HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200) {
        throw new AssertionError("GET " + uri + " answered " + r.statusCode() + ": " + r.body());
      }
      return r.body();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}
