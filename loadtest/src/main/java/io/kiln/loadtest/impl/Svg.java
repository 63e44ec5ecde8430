package io.kiln.loadtest.impl;

import io.kiln.loadtest.RunResult;
import java.util.List;
import java.util.Locale;

/**
 * Inline SVG charts, drawn by hand so reports are self-contained (no scripts, fonts or network).
 * Stateless.
 */
public final class Svg {
  public static final String[] PALETTE = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
      "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
  private static final int W = 760;
  private static final int H = 320;
  private static final int LEFT = 70;
  private static final int RIGHT = 130;
  private static final int TOP = 34;
  private static final int BOTTOM = 46;

  private Svg() {
  }

  /** A named series of percentile points from {@code count} samples. */
  public record Distribution(String name, List<RunResult.PercentilePoint> points, long count) {
  }

  /** A named line of (x, y) values; {@code dashed} for secondary lines. */
  public record Line(String name, String color, double[] x, double[] y, boolean dashed) {
  }

  /** A horizontal reference line. */
  public record Rule(String label, double y, String color) {
  }

  /**
   * Latency against percentile on a "nines" axis: x = -log10(1 - p), so 90 %, 99 %, 99.9 % are equally
   * spaced and the tail gets the room it deserves. The 100 % point (max) sits at the right edge. The
   * latency axis turns logarithmic when the series span more than two decades.
   */
  public static String percentileChart(String id, String title, List<Distribution> series, Rule rule) {
    double maxNines = 2;
    double minY = Double.MAX_VALUE;
    double maxY = 0;
    for (Distribution d : series) {
      for (RunResult.PercentilePoint p : d.points()) {
        if (p.percentile() < 100) {
          maxNines = Math.max(maxNines, Math.ceil(nines(p.percentile()) - 1e-9));
        }
        maxY = Math.max(maxY, p.latencyMs());
        if (p.latencyMs() > 0) {
          minY = Math.min(minY, p.latencyMs());
        }
      }
    }
    long most = series.stream().mapToLong(Distribution::count).max().orElse(0);
    // Beyond log10(samples) nines a "percentile" is just the maximum again: do not draw an empty tail.
    maxNines = Math.min(maxNines, Math.max(2, Math.min(7, Math.floor(Math.log10(Math.max(1, most))))));
    if (rule != null) {
      maxY = Math.max(maxY, rule.y());
    }
    boolean logY = minY != Double.MAX_VALUE && maxY / minY > 100;
    Axis y = logY ? Axis.log(minY, maxY) : Axis.linear(0, maxY);
    Axis x = Axis.fixed(0, maxNines);
    StringBuilder sb = open(id, title);
    for (int n = 0; n <= maxNines; n++) {
      double px = x.px(n, LEFT, W - RIGHT);
      gridX(sb, px, n == 0 ? "0%" : percentLabel(n));
    }
    yAxis(sb, y, "latency (ms)" + (logY ? ", log scale" : ""));
    sb.append(text(LEFT + (W - RIGHT - LEFT) / 2.0, H - 8, "percentile", "middle", 12, "#333"));
    int i = 0;
    for (Distribution d : series) {
      String color = PALETTE[i % PALETTE.length];
      StringBuilder path = new StringBuilder();
      for (RunResult.PercentilePoint p : d.points()) {
        double nx = p.percentile() >= 100 ? maxNines : Math.min(maxNines, nines(p.percentile()));
        double v = logY ? Math.max(p.latencyMs(), y.min) : p.latencyMs();
        path.append(path.length() == 0 ? "M" : " L").append(f(x.px(nx, LEFT, W - RIGHT))).append(',')
            .append(f(y.py(v, H - BOTTOM, TOP)));
      }
      sb.append("<path d=\"").append(path).append("\" fill=\"none\" stroke=\"").append(color)
          .append("\" stroke-width=\"2\"/>\n");
      legend(sb, i, d.name(), color, false);
      i++;
    }
    rule(sb, y, rule);
    return close(sb);
  }

  /** Lines over a shared x axis (seconds, or any quantity named by {@code xLabel}). */
  public static String lineChart(String id, String title, String xLabel, String yLabel, List<Line> lines, Rule rule,
      boolean markers) {
    double minX = Double.MAX_VALUE;
    double maxX = -Double.MAX_VALUE;
    double maxY = 0;
    for (Line l : lines) {
      for (int k = 0; k < l.x().length; k++) {
        minX = Math.min(minX, l.x()[k]);
        maxX = Math.max(maxX, l.x()[k]);
        if (!Double.isNaN(l.y()[k])) {
          maxY = Math.max(maxY, l.y()[k]);
        }
      }
    }
    if (minX == Double.MAX_VALUE) {
      minX = 0;
      maxX = 1;
    }
    if (rule != null) {
      maxY = Math.max(maxY, rule.y());
    }
    Axis x = Axis.linear(Math.min(0, minX), Math.max(maxX, minX + 1e-9));
    Axis y = Axis.linear(0, maxY);
    StringBuilder sb = open(id, title);
    for (double t : x.ticks()) {
      gridX(sb, x.px(t, LEFT, W - RIGHT), num(t));
    }
    yAxis(sb, y, yLabel);
    sb.append(text(LEFT + (W - RIGHT - LEFT) / 2.0, H - 8, xLabel, "middle", 12, "#333"));
    int i = 0;
    for (Line l : lines) {
      StringBuilder path = new StringBuilder();
      boolean gap = true;
      for (int k = 0; k < l.x().length; k++) {
        if (Double.isNaN(l.y()[k])) {
          // No data in this interval: break the line rather than draw a fake zero.
          gap = true;
          continue;
        }
        path.append(gap ? " M" : " L").append(f(x.px(l.x()[k], LEFT, W - RIGHT))).append(',')
            .append(f(y.py(l.y()[k], H - BOTTOM, TOP)));
        gap = false;
        if (markers) {
          sb.append("<circle cx=\"").append(f(x.px(l.x()[k], LEFT, W - RIGHT))).append("\" cy=\"")
              .append(f(y.py(l.y()[k], H - BOTTOM, TOP))).append("\" r=\"3\" fill=\"").append(l.color()).append("\"/>\n");
        }
      }
      sb.append("<path d=\"").append(path.toString().trim()).append("\" fill=\"none\" stroke=\"").append(l.color())
          .append("\" stroke-width=\"2\"").append(l.dashed() ? " stroke-dasharray=\"5,4\"" : "").append("/>\n");
      legend(sb, i++, l.name(), l.color(), l.dashed());
    }
    rule(sb, y, rule);
    return close(sb);
  }

  private static void rule(StringBuilder sb, Axis y, Rule rule) {
    if (rule == null) {
      return;
    }
    double py = y.py(rule.y(), H - BOTTOM, TOP);
    sb.append("<line x1=\"").append(LEFT).append("\" x2=\"").append(W - RIGHT).append("\" y1=\"").append(f(py))
        .append("\" y2=\"").append(f(py)).append("\" stroke=\"").append(rule.color())
        .append("\" stroke-dasharray=\"6,4\"/>\n");
    sb.append(text(W - RIGHT - 4, py - 4, rule.label(), "end", 11, rule.color()));
  }

  static double nines(double percentile) {
    return -Math.log10(1 - percentile / 100.0);
  }

  private static String percentLabel(int nines) {
    return nines == 1 ? "90%" : "99" + (nines > 2 ? "." + "9".repeat(nines - 2) : "") + "%";
  }

  private static StringBuilder open(String id, String title) {
    StringBuilder sb = new StringBuilder(4096);
    sb.append("<svg id=\"").append(Html.escape(id)).append("\" class=\"chart\" viewBox=\"0 0 ").append(W).append(' ')
        .append(H).append("\" width=\"").append(W).append("\" height=\"").append(H)
        .append("\" role=\"img\" font-family=\"sans-serif\">\n");
    sb.append("<title>").append(Html.escape(title)).append("</title>\n");
    sb.append("<rect x=\"0\" y=\"0\" width=\"").append(W).append("\" height=\"").append(H).append("\" fill=\"#fff\"/>\n");
    sb.append(text(LEFT, 20, title, "start", 14, "#111"));
    sb.append("<rect x=\"").append(LEFT).append("\" y=\"").append(TOP).append("\" width=\"").append(W - RIGHT - LEFT)
        .append("\" height=\"").append(H - BOTTOM - TOP).append("\" fill=\"none\" stroke=\"#999\"/>\n");
    return sb;
  }

  private static String close(StringBuilder sb) {
    return sb.append("</svg>\n").toString();
  }

  private static void gridX(StringBuilder sb, double px, String label) {
    sb.append("<line x1=\"").append(f(px)).append("\" x2=\"").append(f(px)).append("\" y1=\"").append(TOP)
        .append("\" y2=\"").append(H - BOTTOM).append("\" stroke=\"#e5e5e5\"/>\n");
    sb.append(text(px, H - BOTTOM + 16, label, "middle", 11, "#333"));
  }

  private static void yAxis(StringBuilder sb, Axis y, String label) {
    for (double v : y.ticks()) {
      double py = y.py(v, H - BOTTOM, TOP);
      sb.append("<line x1=\"").append(LEFT).append("\" x2=\"").append(W - RIGHT).append("\" y1=\"").append(f(py))
          .append("\" y2=\"").append(f(py)).append("\" stroke=\"#e5e5e5\"/>\n");
      sb.append(text(LEFT - 6, py + 4, num(v), "end", 11, "#333"));
    }
    sb.append("<text x=\"16\" y=\"").append(f(TOP + (H - BOTTOM - TOP) / 2.0))
        .append("\" font-size=\"12\" fill=\"#333\" text-anchor=\"middle\" transform=\"rotate(-90 16 ")
        .append(f(TOP + (H - BOTTOM - TOP) / 2.0)).append(")\">").append(Html.escape(label)).append("</text>\n");
  }

  private static void legend(StringBuilder sb, int i, String name, String color, boolean dashed) {
    double y = TOP + 10 + i * 18;
    int x = W - RIGHT + 10;
    sb.append("<line x1=\"").append(x).append("\" x2=\"").append(x + 18).append("\" y1=\"").append(f(y))
        .append("\" y2=\"").append(f(y)).append("\" stroke=\"").append(color).append("\" stroke-width=\"3\"")
        .append(dashed ? " stroke-dasharray=\"5,3\"" : "").append("/>\n");
    String shown = name.length() > 16 ? name.substring(0, 15) + "…" : name;
    sb.append(text(x + 24, y + 4, shown, "start", 11, "#111"));
  }

  private static String text(double x, double y, String s, String anchor, int size, String color) {
    return "<text x=\"" + f(x) + "\" y=\"" + f(y) + "\" font-size=\"" + size + "\" fill=\"" + color
        + "\" text-anchor=\"" + anchor + "\">" + Html.escape(s) + "</text>\n";
  }

  static String f(double v) {
    return String.format(Locale.ROOT, "%.1f", v);
  }

  static String num(double v) {
    if (v == Math.rint(v) && Math.abs(v) < 1e15) {
      return Long.toString((long) v);
    }
    String s = String.format(Locale.ROOT, "%.4g", v);
    return s.contains(".") && !s.contains("e") ? s.replaceAll("0+$", "").replaceAll("\\.$", "") : s;
  }

  /** A value axis: linear with "nice" ticks, or log10 with decade ticks. */
  static final class Axis {
    final double min;
    final double max;
    final boolean log;
    final double step;

    private Axis(double min, double max, boolean log, double step) {
      this.min = min;
      this.max = max;
      this.log = log;
      this.step = step;
    }

    static Axis linear(double min, double max) {
      if (max <= min) {
        max = min + 1;
      }
      double step = niceStep((max - min) / 5);
      return new Axis(Math.floor(min / step) * step, Math.ceil(max / step) * step, false, step);
    }

    static Axis fixed(double min, double max) {
      return new Axis(min, max, false, 1);
    }

    static Axis log(double min, double max) {
      return new Axis(Math.pow(10, Math.floor(Math.log10(min))), Math.pow(10, Math.ceil(Math.log10(max))), true, 10);
    }

    static double niceStep(double raw) {
      double mag = Math.pow(10, Math.floor(Math.log10(raw)));
      double r = raw / mag;
      // A hair of slack, so 10.003 s of data gets ticks of 2 s rather than 5 s.
      return (r <= 1.01 ? 1 : r <= 2.02 ? 2 : r <= 5.05 ? 5 : 10) * mag;
    }

    double[] ticks() {
      int n = log ? (int) Math.round(Math.log10(max / min)) + 1 : (int) Math.round((max - min) / step) + 1;
      double[] t = new double[n];
      for (int i = 0; i < n; i++) {
        t[i] = log ? min * Math.pow(10, i) : min + i * step;
      }
      return t;
    }

    double px(double v, double from, double to) {
      return from + frac(v) * (to - from);
    }

    double py(double v, double bottom, double top) {
      return bottom - frac(v) * (bottom - top);
    }

    private double frac(double v) {
      if (log) {
        return (Math.log10(Math.max(v, min)) - Math.log10(min)) / (Math.log10(max) - Math.log10(min));
      }
      return (v - min) / (max - min);
    }
  }
}
