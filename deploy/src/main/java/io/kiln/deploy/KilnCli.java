package io.kiln.deploy;

import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.ScopeType;

/**
 * The {@code kiln} command. Exit codes: 0 success, 1 a failure the command reports in one line (or, for
 * an invalid deployment file, one line per problem), 2 a usage error.
 */
// scope INHERIT: every subcommand (and the job subcommands) inherits --help/-h and --version/-V.
@Command(name = "kiln", mixinStandardHelpOptions = true, scope = ScopeType.INHERIT, version = "kiln 0.1.0",
    description = "Kiln: model serving from warm, node-pinned worker pools.",
    subcommands = {UpCommand.class, StartCommand.class, DeployCommand.class, ValidateCommand.class,
        StatusCommand.class, DeleteCommand.class, StopCommand.class, JobCommand.class, LogsCommand.class,
        HelpCommand.class, CompletionCommand.class})
public final class KilnCli implements Runnable {

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  public static void main(String[] args) {
    // Node commands (up, start --foreground) return only once their node has stopped.
    System.exit(run(new PrintWriter(System.out, true), new PrintWriter(System.err, true), args));
  }

  /** The whole command tree, as {@link #main} runs it (tests walk it to check every command's help). */
  static CommandLine commandLine() {
    return new CommandLine(new KilnCli());
  }

  /** Runs a command with its output on {@code out} and {@code err}, and returns its exit code. */
  static int run(PrintWriter out, PrintWriter err, String... args) {
    CommandLine cli = commandLine();
    cli.setOut(out);
    cli.setErr(err);
    cli.setExecutionExceptionHandler((ex, line, parsed) -> {
      if (ex instanceof CliException) {
        line.getErr().println("kiln: " + ex.getMessage());
        return 1;
      }
      throw ex;
    });
    // A usage error says what is wrong in one line and where help is, rather than print the whole usage.
    cli.setParameterExceptionHandler((ex, args1) -> {
      CommandLine c = ex.getCommandLine();
      String message = ex.getMessage().startsWith("Error: ") ? ex.getMessage().substring(7) : ex.getMessage();
      c.getErr().println(c.getCommandSpec().qualifiedName() + ": " + message + " (see '"
          + c.getCommandSpec().qualifiedName() + " --help')");
      return c.getCommandSpec().exitCodeOnInvalidInput();
    });
    try {
      return cli.execute(args);
    } finally {
      out.flush();
      err.flush();
    }
  }
}
