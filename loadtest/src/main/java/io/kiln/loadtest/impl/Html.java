package io.kiln.loadtest.impl;

import java.util.Locale;

/** HTML page scaffolding and escaping for the reports. Stateless. */
public final class Html {
  private static final String STYLE = """
      body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#111;max-width:1100px}
      h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
      .sub{color:#555;margin-bottom:16px}
      table{border-collapse:collapse;font-size:13px;margin:6px 0}
      th,td{border:1px solid #ddd;padding:4px 8px;text-align:right} th{background:#f4f4f4}
      td.l,th.l{text-align:left}
      .ok{color:#1a7f37;font-weight:600} .bad{color:#c62828;font-weight:600}
      .note{color:#555;font-size:12px;max-width:900px}
      .chart{display:block;margin:8px 0;border:1px solid #eee}
      pre{background:#f7f7f7;padding:8px;font-size:12px;overflow:auto}
      """;

  private Html() {
  }

  /** Escapes text for element content and double-quoted attributes. */
  public static String escape(String s) {
    if (s == null) {
      return "";
    }
    StringBuilder sb = new StringBuilder(s.length() + 8);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '<' -> sb.append("&lt;");
        case '>' -> sb.append("&gt;");
        case '&' -> sb.append("&amp;");
        case '"' -> sb.append("&quot;");
        case '\'' -> sb.append("&#39;");
        default -> sb.append(c);
      }
    }
    return sb.toString();
  }

  static StringBuilder page(String title, String subtitle) {
    StringBuilder sb = new StringBuilder(32_768);
    sb.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>").append(escape(title))
        .append("</title>\n<style>").append(STYLE).append("</style></head>\n<body>\n<h1>").append(escape(title))
        .append("</h1>\n<div class=\"sub\">").append(escape(subtitle)).append("</div>\n");
    return sb;
  }

  static String end(StringBuilder sb) {
    return sb.append("</body></html>\n").toString();
  }

  /** A self-contained page (the reports' style, no scripts): {@code body} is HTML, the title and subtitle text. */
  public static String document(String title, String subtitle, String body) {
    return end(page(title, subtitle).append(body));
  }

  static String ms(double v) {
    return String.format(Locale.ROOT, v >= 100 ? "%.1f" : v >= 1 ? "%.2f" : "%.3f", v);
  }

  static String rate(double v) {
    return String.format(Locale.ROOT, v >= 100 ? "%,.0f" : "%,.1f", v);
  }

  static String pct(double ratio) {
    return String.format(Locale.ROOT, "%.2f%%", ratio * 100);
  }

  static String ratio(double v) {
    return Double.isFinite(v) ? ratioNumber(v) + "×" : "–";
  }

  /** Two decimals, or two significant digits below 0.1 (a ratio to a compute limit can be 0.019). */
  public static String ratioNumber(double v) {
    return String.format(Locale.ROOT, v != 0 && Math.abs(v) < 0.1 ? "%.2g" : "%.2f", v);
  }
}
