package io.kiln.deploy;

import io.kiln.runtime.ClusterOptions;
import io.kiln.runtime.NodeOptions;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;

/** The {@code kiln} commands' parsing, for tests outside this package (the commands are package-private). */
public final class KilnCommands {

  private KilnCommands() {
  }

  /** {@code kiln start} with its arguments parsed as picocli parses them; nothing runs. */
  public static final class Start {
    private final StartCommand command;

    private Start(StartCommand command) {
      this.command = command;
    }

    /** The cluster options the command would start its node with; a bad value throws as the CLI would. */
    public ClusterOptions cluster() {
      return command.cluster();
    }

    /** The drain on SIGTERM the command would run; a bad value throws as the CLI would. */
    public io.kiln.deploy.node.DrainOptions drain() {
      return command.opts.drain();
    }

    /** The node options, with the node id defaulted as it would be under {@code env}. */
    public NodeOptions node(Map<String, String> env) {
      if (command.opts.nodeId == null) {
        command.opts.nodeId = NodeIdentity.defaultId(env);
      }
      return command.opts.node();
    }
  }

  /** {@code kiln} in a child JVM on the test class path, with the {@code kiln} script's flags sized for test nodes. */
  public static io.kiln.testkit.KilnProcess.Builder process() {
    return io.kiln.testkit.KilnProcess.java(KilnCli.class.getName());
  }

  /** Runs {@code kiln ARGS} in this JVM as {@code main} would, with its output on {@code out} and {@code err}. */
  public static int run(java.io.PrintWriter out, java.io.PrintWriter err, String... args) {
    return KilnCli.run(out, err, args);
  }

  /** The repository's root folder (the one holding models/mlp). */
  public static java.nio.file.Path repositoryRoot() {
    return KilnCliTest.repositoryRoot();
  }

  /** Parses {@code kiln start ARGS} (without the {@code start}). */
  public static Start parseStart(List<String> args) {
    StartCommand c = new StartCommand();
    new CommandLine(c).parseArgs(args.toArray(String[]::new));
    return new Start(c);
  }
}
