package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.loadtest.impl.ResultsFolder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A folder as {@code loadtest/bench-ocr-graph.sh} writes it (the graph through Kiln and the five steps in one process,
 * at c=1 and c=2, three rounds, even rounds in reverse order, images/s) is rendered into RESULTS.md's generated part as
 * a reference per concurrency, never as a target (issue #36 names no number for the graph); a run with a wrong answer
 * (counted as an error by the script) leaves its check without a verdict.
 */
class OcrGraphResultsTest {

  private static final String LABEL = "OCR graph, c=%d: ocr-read through Kiln / the five steps in one process";

  /** images/s of a run: direct 10 at c1 and 16 at c2, the graph at 80 % and 75 % of it. */
  private static double rate(String config, int c) {
    return config.equals("direct") ? (c == 1 ? 10 : 16) : (c == 1 ? 8 : 12);
  }

  private static void folder(Path results) throws Exception {
    Path d = Files.createDirectories(results.resolve("ocr-graph-20260101-000000"));
    Files.writeString(d.resolve("meta.txt"), "scenario=ocr-graph\ncommand=ROUNDS=3 loadtest/bench-ocr-graph.sh\n"
        + "started=2026-01-01T00:00:00Z\ngit=abc1234\ncpus=2\ncpu_model=Test CPU\nmemory=1.0 GiB\njava=openjdk 17\n"
        + "os=Linux\nloadavg_start=1.10 1.00 0.90\nload_wait=1-min load 1.10 < 2.0 after 0 s\n"
        + "title=The OCR graph (issue #36)\nonnxruntime_kiln=onnxruntime (Java) 1.21.1\n"
        + "loadavg_end=1.20 1.10 1.00\nfinished=2026-01-01T00:10:00Z\n");
    List<String> plan = List.of("graph 1", "direct 1", "graph 2", "direct 2");
    List<String> rounds = new ArrayList<>(List.of("round\tname\tstart\tvalue\tunit\terrors"));
    double t = 1_767_225_600;
    for (int r = 1; r <= 3; r++) {
      List<String> order = new ArrayList<>(plan);
      if (r % 2 == 0) {
        Collections.reverse(order);
      }
      for (String run : order) {
        String[] f = run.split(" ");
        int c = Integer.parseInt(f[1]);
        int errors = r == 2 && c == 2 && f[0].equals("graph") ? 1 : 0;
        rounds.add(String.format(Locale.ROOT, "%d\tocr-c%d-%s\t%.3f\t%s\timages/s\t%d", r, c, f[0], t += 14,
            rate(f[0], c), errors));
      }
    }
    Files.write(d.resolve("rounds.tsv"), rounds);
    List<String> checks = new ArrayList<>(List.of("label\tkind\trun\tbase\top\ttarget\tshow"));
    for (int c : new int[] {1, 2}) {
      checks.add(String.format(Locale.ROOT, LABEL + "\treference, not a target\tocr-c%d-graph\tocr-c%d-direct\t>=\t0.9"
          + "\tpercent", c, c, c));
    }
    Files.write(d.resolve("checks.tsv"), checks);
  }

  @Test
  void eachConcurrencyIsAReferenceWithItsRoundsAndARunWithAWrongAnswerIsNotJudged(@TempDir Path results)
      throws Exception {
    folder(results);

    String md = ResultsMarkdown.render(ResultsFolder.latestByScenario(results));

    assertThat(md).contains("## ocr-graph: The OCR graph (issue #36)")
        .contains("| " + String.format(Locale.ROOT, LABEL, 1) + " | reference, not a target | r1: 8.00 / 10.00 "
            + "images/s = 80 %; r2: 8.00 / 10.00 images/s = 80 %; r3: 8.00 / 10.00 images/s = 80 % | median 80 % "
            + "(80–80 %, 3 rounds) | ≥ 90 % |")
        .contains("| ocr-graph | reference, not a target | " + String.format(Locale.ROOT, LABEL, 2) + " ≥ 90 % |")
        .contains("not judged: r2: ocr-c2-graph had 1 errors")
        .doesNotContain("| ocr-graph | target |");
  }
}
