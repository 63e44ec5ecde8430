package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/**
 * Every command of the real command tree answers {@code --help} and {@code -h} with its usage and options (exit 0),
 * so a command added without help fails here; {@code kiln help CMD} and {@code kiln completion} work.
 */
@Tag("slow")
class KilnHelpTest {

  /** Every command's path under {@code kiln}, e.g. {@code [job, submit]}, walked from the tree main runs. */
  static List<List<String>> commandPaths() {
    List<List<String>> paths = new ArrayList<>();
    walk(KilnCli.commandLine(), new ArrayList<>(), paths);
    return paths;
  }

  private static void walk(CommandLine line, List<String> path, List<List<String>> paths) {
    for (CommandLine sub : line.getSubcommands().values()) {
      List<String> p = new ArrayList<>(path);
      p.add(sub.getCommandName());
      if (!paths.contains(p)) {
        paths.add(p);
        walk(sub, p, paths);
      }
    }
  }

  static CommandLine command(List<String> path) {
    CommandLine c = KilnCli.commandLine();
    for (String name : path) {
      c = c.getSubcommands().get(name);
    }
    return c;
  }

  @Test
  void theTreeHoldsEveryCommand() {
    assertThat(commandPaths()).contains(List.of("up"), List.of("start"), List.of("deploy"), List.of("validate"),
        List.of("status"), List.of("stop"), List.of("logs"), List.of("delete"), List.of("help"),
        List.of("completion"), List.of("job"), List.of("job", "submit"), List.of("job", "status"),
        List.of("job", "list"));
  }

  @Test
  void everyCommandAnswersHelpAndHWithItsUsageAndEveryOption() {
    for (List<String> path : commandPaths()) {
      List<String> options = command(path).getCommandSpec().options().stream()
          .filter(o -> !o.hidden()).map(OptionSpec::longestName).toList();
      for (String flag : List.of("--help", "-h")) {
        List<String> args = new ArrayList<>(path);
        args.add(flag);
        KilnCliTest.Run r = KilnCliTest.kiln(args.toArray(String[]::new));
        String what = "kiln " + String.join(" ", args);
        assertThat(r.code()).as(what + ": " + r.err()).isZero();
        assertThat(r.err()).as(what).isEmpty();
        assertThat(r.out()).as(what).contains("Usage: kiln " + String.join(" ", path))
            .contains("--help").contains(options);
      }
    }
  }

  @Test
  void helpCommandPrintsACommandsUsage() {
    for (List<String> path : commandPaths()) {
      if (path.size() == 1 && !path.get(0).equals("help")) {
        KilnCliTest.Run r = KilnCliTest.kiln("help", path.get(0));
        assertThat(r.code()).as("kiln help " + path.get(0)).isZero();
        assertThat(r.out()).contains("Usage: kiln " + path.get(0));
      }
    }
    KilnCliTest.Run deploy = KilnCliTest.kiln("help", "deploy");
    assertThat(deploy.out()).contains("--dry-run", "--prune", "--wait", "--timeout");
  }

  @Test
  void completionPrintsABashScriptForEveryCommand() {
    KilnCliTest.Run r = KilnCliTest.kiln("completion");
    assertThat(r.code()).isZero();
    assertThat(r.out()).startsWith("#!/usr/bin/env bash").contains("complete -F").contains("_picocli_kiln");
    for (List<String> path : commandPaths()) {
      assertThat(r.out()).as("completion of " + path).contains(path.get(path.size() - 1));
    }
    assertThat(r.out()).contains("--dry-run", "--prune", "--head", "--address");
  }
}
