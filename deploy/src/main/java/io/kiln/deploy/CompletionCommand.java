package io.kiln.deploy;

import picocli.AutoComplete;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code kiln completion}: prints a bash (and zsh, through bashcompinit) completion script for every command and
 * option, generated from the command tree itself, so it never goes stale: {@code source <(./kiln completion)}.
 */
@Command(name = "completion", description = "Print a bash completion script: source <(./kiln completion)")
final class CompletionCommand implements Runnable {

  @Spec
  CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().getOut().print(AutoComplete.bash(spec.root().name(), spec.root().commandLine()));
    spec.commandLine().getOut().flush();
  }
}
