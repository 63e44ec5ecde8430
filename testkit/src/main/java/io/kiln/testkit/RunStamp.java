package io.kiln.testkit;

import java.lang.management.ManagementFactory;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * When and on what a reliability scenario was measured: the fields every {@code reliability/results/*.json} carries
 * ({@code at}, {@code loadAverage}: the 1-minute load average, {@code cpus}), which RELIABILITY.md's second table
 * shows per file ({@code reliability/table.py}). Read at the moment of the call; thread-safe.
 */
public final class RunStamp {

  private RunStamp() {
  }

  /** The fields, in that order, for a test that builds its figures as a map. */
  public static Map<String, Object> fields() {
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("at", Instant.now().toString());
    f.put("loadAverage", ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    f.put("cpus", Runtime.getRuntime().availableProcessors());
    return f;
  }

  /** The fields as JSON members without braces ({@code "at":"...","loadAverage":1.5,"cpus":2}), for one built by hand. */
  public static String jsonMembers() {
    Map<String, Object> f = fields();
    return "\"at\":\"" + f.get("at") + "\",\"loadAverage\":" + f.get("loadAverage") + ",\"cpus\":" + f.get("cpus");
  }
}
