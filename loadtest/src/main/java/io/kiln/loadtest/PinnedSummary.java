package io.kiln.loadtest;

import io.kiln.loadtest.PinnedFolder.Leaf;
import io.kiln.loadtest.PinnedFolder.Measurement;
import io.kiln.loadtest.impl.CliArgs;
import io.kiln.loadtest.impl.RoundVerdict;
import io.kiln.loadtest.impl.RoundVerdict.Judgement;
import io.kiln.loadtest.impl.RoundVerdict.Round;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

/**
 * The summary of one {@code loadtest/run.sh pinned} folder: {@code summary.md}, {@code index.html} (every check with
 * Kiln's figure and its limit's side by side, round by round) and the pinned part of RESULTS.md. Every check is
 * judged by {@link RoundVerdict}'s rules: at least three rounds, the limit measured again in each round, alternating
 * with Kiln, median and range reported, "met" only when every round meets the target and "unstable" when the range
 * straddles it.
 *
 * <p>Layout read: {@code round-N/TARGET/} folders (one per round and Kiln model: {@code round-1/identity/}, ...), each
 * holding the round's own measurements — {@code NAME.wrk.txt} (wrk {@code --latency} output), {@code NAME.h2load.txt},
 * {@code NAME.json} (LoadGen run summaries, for gRPC), {@code TARGET.warm.txt} (the warm-up rounds) — the limits
 * measured in the same round beside Kiln's runs, and {@code round.txt} ({@code KEY=VALUE}: {@code start.NAME} epoch
 * seconds and {@code load.NAME} 1-minute load when NAME's measured run began, {@code ready_s}). A folder written before
 * rounds existed (the measurements directly in it) is read as one round whose order was not recorded: every check
 * then says "insufficient rounds". A check over a run with errors is not judged.
 *
 * <p>Every method reads the folder afresh (blocking file I/O; keep it off event loops) and keeps no state, so any thread
 * may call it. Reading is {@link PinnedFolder}'s, judging {@link PinnedChecks}', rendering {@link PinnedMarkdown}'s and
 * {@link PinnedHtml}'s; this class is their entry point and the command line's.
 */
public final class PinnedSummary {

  /** What a check's figure is held against. */
  public enum Kind {
    /** The request-path issue's own target: the one that decides. */
    TARGET("target"),
    /** #28's regression floor, set later and lower than the target; never the target itself. */
    FLOOR_28("floor (#28), not the target");

    private final String text;

    Kind(String text) {
      this.text = text;
    }

    public String text() {
      return text;
    }
  }

  /** One round of a check: the two figures it compares (b null for an absolute check) and the value or problem. */
  record Cell(Leaf leaf, Measurement a, Measurement b, Round round) {
  }

  /**
   * One check, judged over its rounds.
   *
   * @param label     what is compared, e.g. {@code identity JSON / bare JSON, c16}
   * @param kind      the request-path issue's target, or a later floor
   * @param run       the measured target's name
   * @param base      the limit's (or baseline's) name, measured in the same rounds; {@code null} for an absolute check
   * @param judgement the verdict, with median and range
   * @param cells     the rounds it was measured in
   */
  public record Check(String label, Kind kind, String run, String base, Judgement judgement, List<Cell> cells) {
    public boolean met() {
      return judgement.status() == RoundVerdict.Status.MET;
    }

    /** {@code median 64 % (62–66 %, 3 rounds)}, or {@code –}. */
    public String measured() {
      return judgement.measured();
    }

    /** {@code ≥ 70 %}. */
    public String goal() {
      return judgement.target().toString();
    }

    public String verdict() {
      return judgement.verdict();
    }
  }

  private PinnedSummary() {
  }

  /**
   * The checks judged from a pinned-scenario folder, in the order summary.md lists them: the request-path issue's
   * targets, then #28's floors.
   *
   * @throws IOException if a file cannot be read
   * @throws IllegalArgumentException if a wrk or h2load output is not one of a completed run
   */
  public static List<Check> checks(Path dir) throws IOException {
    return PinnedChecks.judge(PinnedFolder.read(dir));
  }

  /**
   * The pinned scenario's part of RESULTS.md: how it was measured, every check with each round's figures (both
   * measured in the same round), median, range, target and verdict, then every measurement.
   *
   * @throws IOException if a file cannot be read
   * @throws IllegalArgumentException if a wrk or h2load output is not one of a completed run
   */
  public static String resultsSection(Path dir) throws IOException {
    return markdownOf(PinnedFolder.read(dir)).resultsSection();
  }

  /**
   * The markdown summary of a pinned-scenario folder ({@code summary.md}).
   *
   * @throws IOException if a file cannot be read
   * @throws IllegalArgumentException if a wrk or h2load output is not one of a completed run
   */
  public static String markdown(Path dir) throws IOException {
    return markdownOf(PinnedFolder.read(dir)).summary();
  }

  /**
   * The HTML report of a pinned-scenario folder ({@code index.html}): every check with Kiln's figure and its limit's
   * side by side, round by round, then every measurement.
   *
   * @throws IOException if a file cannot be read
   * @throws IllegalArgumentException if a wrk or h2load output is not one of a completed run
   */
  public static String html(Path dir) throws IOException {
    PinnedFolder folder = PinnedFolder.read(dir);
    return PinnedHtml.render(folder, PinnedChecks.judge(folder));
  }

  private static PinnedMarkdown markdownOf(PinnedFolder folder) {
    return new PinnedMarkdown(folder, PinnedChecks.judge(folder));
  }

  /**
   * {@code PinnedSummary --dir DIR}: writes DIR/summary.md and DIR/index.html and prints the summary. Exits 2 on bad
   * arguments, 1 if the folder cannot be read or holds a wrk output of a failed run.
   */
  public static void main(String[] argv) {
    Path dir;
    try {
      CliArgs args = CliArgs.parse(argv, Set.of());
      if (!args.has("dir")) {
        throw new IllegalArgumentException("usage: PinnedSummary --dir loadtest/results/pinned-TIME");
      }
      dir = Path.of(args.string("dir", null));
      args.rejectUnused();
    } catch (IllegalArgumentException e) {
      System.err.println("error: " + e.getMessage());
      System.exit(2);
      return;
    }
    try {
      PinnedFolder folder = PinnedFolder.read(dir);
      List<Check> checks = PinnedChecks.judge(folder);
      String md = new PinnedMarkdown(folder, checks).summary();
      Files.writeString(dir.resolve("summary.md"), md, StandardCharsets.UTF_8);
      Files.writeString(dir.resolve("index.html"), PinnedHtml.render(folder, checks), StandardCharsets.UTF_8);
      System.out.print(md);
    } catch (IOException | IllegalArgumentException e) {
      System.err.println("failed: " + e.getMessage());
      System.exit(1);
    }
  }
}
