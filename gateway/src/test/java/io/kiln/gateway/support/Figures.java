package io.kiln.gateway.support;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.kiln.testkit.RunStamp;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The figures of one reliability scenario: written as JSON to {@code <kiln.reliability.out>/<scenario>.json}
 * (default {@code target/reliability}) and printed as one {@code RELIABILITY} line, so
 * {@code reliability/run.sh} and RELIABILITY.md can quote them. Also reads the scenario's size from system
 * properties, so the same test runs CI-sized by default and longer on demand.
 */
public final class Figures {

  private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private final String scenario;
  private final Map<String, Object> values = new LinkedHashMap<>();

  public Figures(String scenario) {
    this.scenario = scenario;
    values.put("scenario", scenario);
    values.putAll(RunStamp.fields());
  }

  public Figures put(String key, Object value) {
    values.put(key, value);
    return this;
  }

  public Map<String, Object> values() {
    return values;
  }

  /** Writes and prints the figures; never fails the test for want of a folder. */
  public void write() {
    try {
      Path dir = Path.of(System.getProperty("kiln.reliability.out", "target/reliability"));
      Files.createDirectories(dir);
      Files.writeString(dir.resolve(scenario + ".json"), JSON.writeValueAsString(values));
      System.out.println("RELIABILITY " + scenario + " " + new ObjectMapper().writeValueAsString(values));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A size knob: {@code -Dkiln.reliability.<name>=N}, else {@code ciDefault}. */
  public static long knob(String name, long ciDefault) {
    return Long.getLong("kiln.reliability." + name, ciDefault);
  }

  /** Heap in use after a full collection, in bytes. */
  public static long heapAfterGc() {
    System.gc();
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  /** This process's resident set size in bytes (Linux {@code /proc/self/status}), or -1 elsewhere. */
  public static long rssBytes() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith("VmRSS:")) {
          return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
        }
      }
    } catch (IOException | RuntimeException e) {
      return -1;
    }
    return -1;
  }
}
