package io.kiln.pipelines.impl;

import io.kiln.pipelines.StepLoad;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/** Per-node counts of step attempts running, by step name: now, at most, in total. Thread-safe. */
public final class StepGauges {

  private static final class Gauge {
    int running;
    int peak;
    long total;
  }

  private final ConcurrentHashMap<String, Gauge> gauges = new ConcurrentHashMap<>();

  void enter(String step) {
    Gauge g = gauges.computeIfAbsent(step, s -> new Gauge());
    synchronized (g) {
      g.running++;
      g.total++;
      g.peak = Math.max(g.peak, g.running);
    }
  }

  void exit(String step) {
    Gauge g = gauges.get(step);
    synchronized (g) {
      g.running--;
    }
  }

  public Map<String, StepLoad> snapshot() {
    Map<String, StepLoad> out = new TreeMap<>();
    gauges.forEach((step, g) -> {
      synchronized (g) {
        out.put(step, new StepLoad(step, g.running, g.peak, g.total));
      }
    });
    return out;
  }
}
