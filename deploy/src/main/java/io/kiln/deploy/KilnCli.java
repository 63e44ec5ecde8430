package io.kiln.deploy;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code kiln} command. */
@Command(name = "kiln", mixinStandardHelpOptions = true, version = "kiln 0.1.0",
    description = "Kiln: model serving from warm, node-pinned worker pools.",
    subcommands = {UpCommand.class, StartCommand.class, DeployCommand.class, StatusCommand.class,
        DeleteCommand.class, StopCommand.class})
public final class KilnCli implements Runnable {

  @Override
  public void run() {
    new CommandLine(this).usage(System.out);
  }

  public static void main(String[] args) {
    int code = run(args);
    if (code != 0 || !keepsRunning(args)) {
      System.exit(code);
    }
  }

  /** Runs a command and returns its exit code; failures print one line, not a stack trace. */
  static int run(String... args) {
    CommandLine cli = new CommandLine(new KilnCli());
    cli.setExecutionExceptionHandler((ex, line, parsed) -> {
      if (ex instanceof CliException) {
        line.getErr().println("kiln: " + ex.getMessage());
        return 1;
      }
      throw ex;
    });
    return cli.execute(args);
  }

  private static boolean keepsRunning(String[] args) {
    return false;
  }
}
