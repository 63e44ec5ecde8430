package io.kiln.deploy.e2e;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;

/** The soak's samples over time as a small self-contained HTML page of SVG line plots, one per measure. */
final class SoakReport {

  /**
   * One window of the soak: when it ended (s since start) and what was measured at its end. {@code fds} are the
   * process's descriptors less {@code loadSockets}, the established connections of the load driver to the
   * gateways (both ends live in this process): an open-loop driver opens more of them while latency spikes and
   * its JDK client keeps them pooled, which says nothing about the nodes.
   */
  record Sample(double atSeconds, double okPerSecond, double p99Millis, double heapMiB, double rssMiB, int threads,
                int fds, int loadSockets, long sent, long lost, long failed, String event) {
  }

  private SoakReport() {
  }

  static void write(Path file, String title, List<Sample> samples, String summary) {
    StringBuilder h = new StringBuilder();
    h.append("<!doctype html><meta charset=utf-8><title>").append(title).append("</title>")
        .append("<style>body{font:14px sans-serif;margin:2em}svg{background:#fafafa;border:1px solid #ddd}"
            + "h2{font-size:15px;margin:1.2em 0 .3em}</style><h1>").append(title).append("</h1><p>")
        .append(summary.replace("&", "&amp;").replace("<", "&lt;")).append("</p>");
    plot(h, "heap after GC (MiB)", samples, Sample::heapMiB);
    plot(h, "resident set (MiB)", samples, Sample::rssMiB);
    plot(h, "p99 of answered requests per window (ms)", samples, Sample::p99Millis);
    plot(h, "answered per second", samples, Sample::okPerSecond);
    plot(h, "threads", samples, s -> s.threads());
    plot(h, "open file descriptors, less the load's connections", samples, s -> s.fds());
    plot(h, "the load driver's connections (both ends)", samples, s -> s.loadSockets());
    try {
      Files.createDirectories(file.getParent());
      Files.writeString(file, h.toString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void plot(StringBuilder h, String name, List<Sample> samples, ToDoubleFunction<Sample> f) {
    int w = 720;
    int ht = 160;
    double maxX = samples.stream().mapToDouble(Sample::atSeconds).max().orElse(1);
    double maxY = Math.max(1e-9, samples.stream().mapToDouble(f).max().orElse(1)) * 1.1;
    h.append("<h2>").append(name).append("</h2><svg width=").append(w + 60).append(" height=").append(ht + 30)
        .append("><text x=2 y=12 font-size=11>").append(fmt(maxY)).append("</text><text x=2 y=").append(ht + 8)
        .append(" font-size=11>0</text><text x=").append(w + 10).append(" y=").append(ht + 24)
        .append(" font-size=11>").append(fmt(maxX)).append(" s</text><polyline fill=none stroke=#1f77b4 "
            + "stroke-width=2 points='");
    for (Sample s : samples) {
      h.append(fmt(50 + s.atSeconds() / maxX * w)).append(',').append(fmt(ht + 5 - f.applyAsDouble(s) / maxY * ht))
          .append(' ');
    }
    h.append("'/>");
    for (Sample s : samples) {
      if (s.event() != null) {
        double x = 50 + s.atSeconds() / maxX * w;
        h.append("<line x1=").append(fmt(x)).append(" x2=").append(fmt(x)).append(" y1=5 y2=").append(ht + 5)
            .append(" stroke=#d62728 stroke-dasharray=4><title>").append(s.event()).append("</title></line>");
      }
    }
    h.append("</svg>");
  }

  private static String fmt(double v) {
    return String.format(Locale.ROOT, "%.1f", v);
  }

  /** Least-squares slope of {@code f} per minute over the samples. */
  static double slopePerMinute(List<Sample> samples, ToDoubleFunction<Sample> f) {
    int n = samples.size();
    if (n < 2) {
      return 0;
    }
    double mx = samples.stream().mapToDouble(Sample::atSeconds).average().orElse(0);
    double my = samples.stream().mapToDouble(f).average().orElse(0);
    double num = 0;
    double den = 0;
    for (Sample s : samples) {
      num += (s.atSeconds() - mx) * (f.applyAsDouble(s) - my);
      den += (s.atSeconds() - mx) * (s.atSeconds() - mx);
    }
    return den == 0 ? 0 : num / den * 60;
  }
}
