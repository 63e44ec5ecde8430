package io.kiln.serve.yaml;

import java.util.Collection;
import java.util.Locale;
import java.util.Optional;

/** "Did you mean" for near misses: typos, wrong case, camelCase or kebab-case for snake_case. */
public final class Suggestions {

  private Suggestions() {
  }

  /** The candidate {@code given} most likely meant, if one is close enough. */
  public static Optional<String> closest(String given, Collection<String> candidates) {
    if (given.length() > 64) {
      return Optional.empty();
    }
    String g = normalise(given);
    String best = null;
    int bestDistance = Integer.MAX_VALUE;
    for (String c : candidates) {
      String n = normalise(c);
      int d = n.equals(g) ? 0 : distance(g, n);
      if (d < bestDistance) {
        best = c;
        bestDistance = d;
      }
    }
    // A third of the length, at least one edit and at most three: "ngine" -> "engine", not "uri" -> "name".
    int allowed = Math.max(1, Math.min(3, g.length() / 3));
    return best != null && bestDistance <= allowed ? Optional.of(best) : Optional.empty();
  }

  /** {@code "; did you mean 'x'?"} or an empty string. */
  public static String didYouMean(String given, Collection<String> candidates) {
    return closest(given, candidates).map(s -> "; did you mean '" + s + "'?").orElse("");
  }

  private static String normalise(String s) {
    return s.toLowerCase(Locale.ROOT).replace("_", "").replace("-", "");
  }

  /** Optimal string alignment distance: edits, where swapping two neighbours counts once. */
  static int distance(String a, String b) {
    int[][] d = new int[a.length() + 1][b.length() + 1];
    for (int i = 0; i <= a.length(); i++) {
      d[i][0] = i;
    }
    for (int j = 0; j <= b.length(); j++) {
      d[0][j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
        if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
          d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    return d[a.length()][b.length()];
  }
}
