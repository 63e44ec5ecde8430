package io.kiln.loadtest.impl;

import static io.kiln.loadtest.impl.Html.escape;
import static io.kiln.loadtest.impl.Html.ms;
import static io.kiln.loadtest.impl.Html.pct;
import static io.kiln.loadtest.impl.Html.rate;
import static io.kiln.loadtest.impl.Html.ratio;

import io.kiln.loadtest.MaxThroughputSearch;
import io.kiln.loadtest.Reports;
import io.kiln.loadtest.RunResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Renders results as self-contained HTML pages with inline SVG. Stateless. */
public final class HtmlReports {
  private static final String BASIS_OPEN = "Open loop: latency is measured from each request's intended send time "
      + "(start + i/rate), so time a request spent waiting because the server or the connection pool was busy "
      + "counts (no coordinated omission).";
  private static final String BASIS_CLOSED = "Closed loop: latency is measured from the actual send; each connection "
      + "waits for its answer before sending again, so this under-reports stalls.";

  private HtmlReports() {
  }

  /** One run: summary, outcomes, latency by percentile, throughput and latency over time. */
  public static String run(RunResult r) {
    StringBuilder sb = Html.page("Load test: " + r.name(), r.config().get("target") + " · " + r.config().get("protocol")
        + " · model " + r.config().get("model") + " · " + r.config().get("mode") + " loop · started " + r.startedAt());
    sb.append("<h2>Summary</h2>\n<table><tr>");
    for (String h : new String[] {"offered req/s", "achieved req/s", "ok req/s", "requests", "errors", "p50 ms",
        "p90 ms", "p99 ms", "p99.9 ms", "max ms"}) {
      sb.append("<th>").append(h).append("</th>");
    }
    RunResult.Latency l = r.latencyMs();
    sb.append("</tr>\n<tr><td>").append(r.offeredRps() == null ? "–" : rate(r.offeredRps())).append("</td><td>")
        .append(rate(r.achievedRps())).append("</td><td>").append(rate(r.okRps())).append("</td><td>")
        .append(r.requests()).append("</td><td class=\"").append(r.errors() == 0 ? "ok" : "bad").append("\">")
        .append(r.errors()).append(" (").append(pct(r.errorRatio())).append(")</td><td>").append(ms(l.p50()))
        .append("</td><td>").append(ms(l.p90())).append("</td><td>").append(ms(l.p99())).append("</td><td>")
        .append(ms(l.p999())).append("</td><td>").append(ms(l.max())).append("</td></tr></table>\n");
    sb.append("<p class=\"note\">").append(escape("intended".equals(r.latencyFrom()) ? BASIS_OPEN : BASIS_CLOSED))
        .append(String.format(java.util.Locale.ROOT, " Measured %.2f s after warm-up.", r.measuredSeconds()))
        .append("</p>\n");
    if (r.llm() != null) {
      llm(sb, r.llm());
    }
    sb.append("<h2>Outcomes</h2>\n<table><tr><th class=\"l\">outcome</th><th>count</th></tr>\n");
    for (Map.Entry<String, Long> e : r.outcomes().entrySet()) {
      sb.append("<tr><td class=\"l\">").append(escape(e.getKey())).append("</td><td>").append(e.getValue())
          .append("</td></tr>\n");
    }
    sb.append("</table>\n<h2>Latency by percentile</h2>\n");
    sb.append(Svg.percentileChart("latency-percentiles", "Latency by percentile (" + r.name() + ")",
        List.of(new Svg.Distribution(r.name(), r.distribution(), r.latencyMs().count())), null));
    sb.append("<h2>Over time</h2>\n");
    int n = r.series().size();
    double[] t = new double[n];
    double[] rps = new double[n];
    double[] err = new double[n];
    double[] p50 = new double[n];
    double[] p99 = new double[n];
    double[] max = new double[n];
    for (int i = 0; i < n; i++) {
      RunResult.Sample s = r.series().get(i);
      t[i] = s.t();
      rps[i] = s.rps();
      err[i] = s.errors() / Math.max(1e-9, s.seconds());
      p50[i] = s.p50() == null ? Double.NaN : s.p50();
      p99[i] = s.p99() == null ? Double.NaN : s.p99();
      max[i] = s.max() == null ? Double.NaN : s.max();
    }
    sb.append(Svg.lineChart("throughput-over-time", "Throughput per second", "seconds since warm-up ended", "req/s",
        List.of(new Svg.Line("all", Svg.PALETTE[0], t, rps, false), new Svg.Line("errors", Svg.PALETTE[1], t, err, true)),
        r.offeredRps() == null ? null : new Svg.Rule("offered " + rate(r.offeredRps()) + "/s", r.offeredRps(), "#888"),
        n <= 2));
    sb.append(Svg.lineChart("latency-over-time", "Latency per second", "seconds since warm-up ended", "latency (ms)",
        List.of(new Svg.Line("p50", Svg.PALETTE[2], t, p50, false), new Svg.Line("p99", Svg.PALETTE[3], t, p99, false),
            new Svg.Line("max", Svg.PALETTE[4], t, max, true)), null, n <= 2));
    sb.append("<h2>Configuration</h2>\n<pre>").append(escape(Reports.toJson(r.config()))).append("</pre>\n");
    return Html.end(sb);
  }

  /** Several runs side by side, with ratios to the baseline row. */
  private static void llm(StringBuilder sb, RunResult.Llm llm) {
    sb.append("<h2>Generation (").append(escape(llm.api())).append(")</h2>\n<p>").append(llm.requests())
        .append(" successful streams, ").append(llm.outputTokens()).append(" output tokens (mean ")
        .append(String.format(java.util.Locale.ROOT, "%.1f", llm.meanOutputTokens())).append("): <b>")
        .append(rate(llm.outputTokensPerSecond())).append(" tokens/s</b>, ").append(rate(llm.requestsPerSecond()))
        .append(" req/s.</p>\n<table><tr><th class=\"l\">ms</th><th>count</th><th>p50</th><th>p90</th><th>p99</th>"
            + "<th>mean</th><th>max</th></tr>\n");
    Object[][] rows = {{"time to first token", llm.ttftMs()}, {"inter-token latency", llm.itlMs()},
        {"end to end", llm.e2eMs()}};
    for (Object[] row : rows) {
      RunResult.Latency l = (RunResult.Latency) row[1];
      sb.append("<tr><td class=\"l\">").append(row[0]).append("</td><td>").append(l.count()).append("</td><td>")
          .append(ms(l.p50())).append("</td><td>").append(ms(l.p90())).append("</td><td>").append(ms(l.p99()))
          .append("</td><td>").append(ms(l.mean())).append("</td><td>").append(ms(l.max())).append("</td></tr>\n");
    }
    sb.append("</table>\n<p class=\"note\">Time to first token and end to end start where the run's latency does; "
        + "inter-token latency is every gap between successive text chunks.</p>\n");
  }

  public static String comparison(String title, List<RunResult> runs, List<Reports.ComparisonRow> rows,
      String baseline) {
    return comparison(title, runs, rows, baseline, List.of(), Map.of());
  }

  /**
   * Several runs side by side, with ratios to the baseline row, then (if any) each run against its own
   * limit, then links to related reports.
   */
  public static String comparison(String title, List<RunResult> runs, List<Reports.ComparisonRow> rows,
      String baseline, List<Reports.LimitRow> limits, Map<String, String> links) {
    StringBuilder sb = Html.page(title, "Baseline: " + baseline + " · ratios are run / baseline");
    if (!limits.isEmpty()) {
      sb.append("<h2>Against the limits</h2>\n<p class=\"note\">Each run against the baseline measured for the same "
          + "load in this session (ratios are run / limit).</p>\n<table><tr><th class=\"l\">run</th>"
          + "<th class=\"l\">limit</th><th>req/s</th><th>limit req/s</th><th>× throughput</th><th>p50 ms</th>"
          + "<th>× p50</th><th>p99 ms</th><th>× p99</th></tr>\n");
      for (Reports.LimitRow l : limits) {
        sb.append("<tr><td class=\"l\">").append(escape(l.run().name())).append("</td><td class=\"l\">")
            .append(escape(l.limit().name())).append("</td><td>").append(rate(l.run().achievedRps())).append("</td><td>")
            .append(rate(l.limit().achievedRps())).append("</td><td><b>").append(ratio(l.throughputRatio()))
            .append("</b></td><td>").append(ms(l.run().latencyMs().p50())).append("</td><td>").append(ratio(l.p50Ratio()))
            .append("</td><td>").append(ms(l.run().latencyMs().p99())).append("</td><td>").append(ratio(l.p99Ratio()))
            .append("</td></tr>\n");
      }
      sb.append("</table>\n");
    }
    sb.append("<h2>Scenarios</h2>\n<table><tr><th class=\"l\">scenario</th><th class=\"l\">mode</th>"
        + "<th>offered req/s</th><th>achieved req/s</th><th>× baseline</th><th>p50 ms</th><th>× baseline</th>"
        + "<th>p99 ms</th><th>× baseline</th><th>p99.9 ms</th><th>max ms</th><th>errors</th></tr>\n");
    for (Reports.ComparisonRow c : rows) {
      RunResult r = c.run();
      boolean isBase = c.run().name().equals(baseline);
      sb.append("<tr><td class=\"l\">").append(isBase ? "<b>" : "").append(escape(r.name())).append(isBase ? "</b>" : "")
          .append("</td><td class=\"l\">").append(escape(String.valueOf(r.config().get("mode"))))
          .append(r.config().get("connections") != null && "closed".equals(r.config().get("mode"))
              ? " ×" + r.config().get("connections") : "")
          .append("</td><td>").append(r.offeredRps() == null ? "–" : rate(r.offeredRps())).append("</td><td>")
          .append(rate(r.achievedRps())).append("</td><td>").append(ratio(c.throughputRatio())).append("</td><td>")
          .append(ms(r.latencyMs().p50())).append("</td><td>").append(ratio(c.p50Ratio())).append("</td><td>")
          .append(ms(r.latencyMs().p99())).append("</td><td>").append(ratio(c.p99Ratio())).append("</td><td>")
          .append(ms(r.latencyMs().p999())).append("</td><td>").append(ms(r.latencyMs().max())).append("</td><td class=\"")
          .append(r.errors() == 0 ? "ok" : "bad").append("\">").append(pct(r.errorRatio())).append("</td></tr>\n");
    }
    sb.append("</table>\n<h2>Latency by percentile</h2>\n");
    List<Svg.Distribution> ds = new ArrayList<>();
    for (RunResult r : runs) {
      ds.add(new Svg.Distribution(r.name(), r.distribution(), r.latencyMs().count()));
    }
    sb.append(Svg.percentileChart("latency-percentiles", "Latency by percentile", ds, null));
    sb.append("<h2>Throughput over time</h2>\n");
    List<Svg.Line> lines = new ArrayList<>();
    for (int i = 0; i < runs.size(); i++) {
      List<RunResult.Sample> s = runs.get(i).series();
      double[] x = new double[s.size()];
      double[] y = new double[s.size()];
      for (int k = 0; k < s.size(); k++) {
        x[k] = s.get(k).t();
        y[k] = s.get(k).rps();
      }
      lines.add(new Svg.Line(runs.get(i).name(), Svg.PALETTE[i % Svg.PALETTE.length], x, y, false));
    }
    sb.append(Svg.lineChart("throughput-over-time", "Throughput per second", "seconds since warm-up ended", "req/s",
        lines, null, false));
    if (!links.isEmpty()) {
      sb.append("<h2>Reports</h2>\n<ul>\n");
      links.forEach((label, href) -> sb.append("<li><a href=\"").append(escape(href)).append("\">").append(escape(label))
          .append("</a></li>\n"));
      sb.append("</ul>\n");
    }
    return Html.end(sb);
  }

  /** A max-throughput search: each step, the verdict, and p99 against offered rate. */
  public static String search(MaxThroughputSearch.Result s) {
    StringBuilder sb = Html.page("Max-throughput search: " + s.name(), "p99 target " + ms(s.options().p99TargetMs())
        + " ms · max error ratio " + pct(s.options().maxErrorRatio()) + " · " + s.stoppedBecause());
    sb.append("<h2>Result</h2>\n<p>Highest passing rate: <b>").append(s.best() == null ? "none" : rate(s.bestRate()) + " req/s")
        .append("</b>").append(s.best() == null ? "" : " (p99 " + ms(s.best().latencyMs().p99()) + " ms, achieved "
            + rate(s.best().achievedRps()) + " req/s)").append("</p>\n");
    sb.append("<h2>Steps</h2>\n<table><tr><th>step</th><th>offered req/s</th><th>achieved req/s</th><th>p50 ms</th>"
        + "<th>p99 ms</th><th>max ms</th><th>errors</th><th class=\"l\">verdict</th></tr>\n");
    List<Double> xs = new ArrayList<>();
    List<Double> ys = new ArrayList<>();
    List<Svg.Distribution> ds = new ArrayList<>();
    for (MaxThroughputSearch.Step st : s.steps()) {
      RunResult r = st.result();
      sb.append("<tr><td>").append(st.step()).append("</td><td>").append(rate(st.rate())).append("</td><td>")
          .append(rate(r.achievedRps())).append("</td><td>").append(ms(r.latencyMs().p50())).append("</td><td>")
          .append(ms(r.latencyMs().p99())).append("</td><td>").append(ms(r.latencyMs().max())).append("</td><td>")
          .append(pct(r.errorRatio())).append("</td><td class=\"l ").append(st.passed() ? "ok" : "bad").append("\">")
          .append(st.passed() ? "pass" : "fail").append(": ").append(escape(st.reason())).append("</td></tr>\n");
      xs.add(st.rate());
      ys.add(r.latencyMs().p99());
      ds.add(new Svg.Distribution("#" + st.step() + " " + rate(st.rate()) + "/s", r.distribution(), r.latencyMs().count()));
    }
    sb.append("</table>\n<h2>p99 against offered rate</h2>\n");
    sb.append(Svg.lineChart("p99-vs-rate", "p99 latency by offered rate", "offered req/s", "p99 (ms)",
        List.of(sortedLine("p99", Svg.PALETTE[3], xs, ys)),
        new Svg.Rule("target " + ms(s.options().p99TargetMs()) + " ms", s.options().p99TargetMs(), "#888"), true));
    sb.append("<h2>Latency by percentile, per step</h2>\n");
    sb.append(Svg.percentileChart("latency-percentiles", "Latency by percentile per step", ds,
        new Svg.Rule("p99 target", s.options().p99TargetMs(), "#888")));
    return Html.end(sb);
  }

  private static Svg.Line sortedLine(String name, String color, List<Double> xs, List<Double> ys) {
    Integer[] idx = new Integer[xs.size()];
    for (int i = 0; i < idx.length; i++) {
      idx[i] = i;
    }
    java.util.Arrays.sort(idx, (a, b) -> Double.compare(xs.get(a), xs.get(b)));
    double[] x = new double[idx.length];
    double[] y = new double[idx.length];
    for (int i = 0; i < idx.length; i++) {
      x[i] = xs.get(idx[i]);
      y[i] = ys.get(idx[i]);
    }
    return new Svg.Line(name, color, x, y, false);
  }
}
