package io.kiln.loadtest;

import io.kiln.loadtest.PinnedFolder.Leaf;
import io.kiln.loadtest.PinnedFolder.Measurement;
import io.kiln.loadtest.PinnedFolder.Target;
import io.kiln.loadtest.PinnedSummary.Cell;
import io.kiln.loadtest.PinnedSummary.Check;
import io.kiln.loadtest.impl.Html;
import io.kiln.loadtest.impl.RoundVerdict;
import io.kiln.loadtest.impl.RoundVerdict.Judgement;
import io.kiln.loadtest.impl.RoundVerdict.Unit;
import java.util.Collections;
import java.util.List;
import java.util.Locale;

/**
 * The pinned scenario's {@code index.html}: every check with Kiln's figure and its limit's side by side, one row per
 * round, then every measurement. Stateless; no I/O (everything shown was read with the folder).
 */
final class PinnedHtml {

  private PinnedHtml() {
  }

  static String render(PinnedFolder folder, List<Check> checks) {
    StringBuilder b = new StringBuilder();
    b.append("<h2>Checks: Kiln and its limit, side by side, round by round</h2>\n<table>\n<tr><th class=\"l\">check</th>"
        + "<th class=\"l\">kind</th><th class=\"l\">round</th><th>Kiln (or measured)</th><th>limit or baseline, same "
        + "round</th><th>value</th><th>median</th><th>range</th><th>target</th><th class=\"l\">verdict</th></tr>\n");
    for (Check c : checks) {
      checkRows(b, c);
    }
    b.append("</table>\n<h2>Every measurement</h2>\n<table>\n<tr><th class=\"l\">round</th><th class=\"l\">target</th>"
        + "<th class=\"l\">what</th><th class=\"l\">client</th><th>req/s</th><th>p50 ms</th><th>p99 ms</th>"
        + "<th>errors</th><th>load before</th></tr>\n");
    for (Leaf l : folder.leaves()) {
      for (Target t : PinnedFolder.TARGETS) {
        Measurement m = l.runs().get(t.name());
        if (m != null) {
          b.append(String.format(Locale.ROOT, "<tr><td class=\"l\">%s</td><td class=\"l\">%s</td><td class=\"l\">%s"
                  + "</td><td class=\"l\">%s</td><td>%,.0f</td><td>%.3f</td><td>%s</td><td>%d</td><td>%s</td></tr>%n",
              Html.escape(l.label()), Html.escape(t.name()), Html.escape(t.what()), Html.escape(m.client()), m.rps(),
              m.p50(), Double.isNaN(m.p99()) ? "–" : String.format(Locale.ROOT, "%.3f", m.p99()), m.errors(),
              Html.escape(l.notes().getOrDefault("load." + t.name(), ""))));
        }
      }
    }
    b.append("</table>\n<p class=\"note\">").append(Html.escape("Command: " + folder.meta("command") + ". Commit "
        + folder.meta("git") + ", " + folder.meta("cpu_model") + " × " + folder.meta("cpus") + ", " + folder.meta("os")
        + ". Rounds: " + PinnedMarkdown.roundsText(folder).replace("**", "") + ". The raw outputs (wrk, h2load, "
        + "LoadGen) are in this folder, one round-N/TARGET/ folder per round.")).append("</p>\n");
    return Html.document("Pinned benchmark: the request path at the hardware limit",
        "Kiln against the bare servers measured in the same rounds; verdicts need " + RoundVerdict.MIN_ROUNDS
            + " interleaved rounds", b.toString());
  }

  /** One row per round; the check's own columns (label, kind, median, range, target, verdict) span them all. */
  private static void checkRows(StringBuilder b, Check c) {
    Unit u = c.judgement().target().unit();
    int span = Math.max(1, c.cells().size());
    String cls = switch (c.judgement().status()) {
      case MET -> "ok";
      case MISSED, UNSTABLE -> "bad";
      default -> "";
    };
    boolean first = true;
    List<Cell> cells = c.cells().isEmpty() ? Collections.singletonList(null) : c.cells();
    for (Cell cell : cells) {
      b.append("<tr>");
      if (first) {
        b.append("<td class=\"l\" rowspan=\"").append(span).append("\">").append(Html.escape(c.label()))
            .append("</td><td class=\"l\" rowspan=\"").append(span).append("\">").append(Html.escape(c.kind().text()))
            .append("</td>");
      }
      if (cell == null) {
        b.append("<td class=\"l\">–</td><td>–</td><td>–</td><td>–</td>");
      } else {
        b.append("<td class=\"l\">").append(Html.escape(cell.leaf().label())).append("</td><td>")
            .append(Html.escape(figure(cell.a(), cell.b() == null))).append("</td><td>")
            .append(cell.b() == null ? "–" : Html.escape(figure(cell.b(), false))).append("</td><td>")
            .append(cell.round().problem() != null ? Html.escape(cell.round().problem())
                : Html.escape(u.format(cell.round().value()))).append("</td>");
      }
      if (first) {
        Judgement j = c.judgement();
        b.append("<td rowspan=\"").append(span).append("\">").append(j.values().isEmpty() ? "–"
                : Html.escape(u.format(j.median()))).append("</td><td rowspan=\"").append(span).append("\">")
            .append(j.values().size() < 2 ? "–" : Html.escape(u.format(j.min()) + " – " + u.format(j.max())))
            .append("</td><td rowspan=\"").append(span).append("\">").append(Html.escape(c.goal()))
            .append("</td><td class=\"l ").append(cls).append("\" rowspan=\"").append(span).append("\">")
            .append(Html.escape(j.verdict())).append("</td>");
        first = false;
      }
      b.append("</tr>\n");
    }
  }

  /** {@code 41,000 req/s (identity-json-c16, wrk)}, or for an absolute check {@code p99 1.800 ms (mlp-json-c16)}. */
  private static String figure(Measurement m, boolean p99) {
    return p99 ? String.format(Locale.ROOT, "p99 %s (%s)", Double.isFinite(m.p99())
        ? String.format(Locale.ROOT, "%.3f ms", m.p99()) : "–", m.name())
        : String.format(Locale.ROOT, "%,.0f req/s (%s, %s)", m.rps(), m.name(), m.client().replace(" (mean)", ", mean"));
  }
}
