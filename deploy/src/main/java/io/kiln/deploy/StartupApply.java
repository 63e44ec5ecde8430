package io.kiln.deploy;

import io.kiln.pipelines.Applications;
import io.kiln.serve.DeploymentLoader;
import io.kiln.serve.DeploymentValidationException;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletionException;

/**
 * {@code kiln start --apply FILE}: a deployment file applied by the node itself once it serves, through the one
 * apply operation {@code kiln deploy} and {@code POST /api/v1/deployments} use ({@link Applications}: deployments
 * and pipelines validated together, stored only if all is valid). Made for a StatefulSet whose every pod is started
 * with the same file from a ConfigMap. The file is the whole truth: deployments and pipelines stored but absent
 * from it are pruned (so one removed from the ConfigMap is deleted at the next start; internal {@code _…} pools
 * never are). Applying a file again is idempotent (the same versions are already desired,
 * so nothing rolls out) and concurrent applies are compare-and-set, so every pod may apply it.
 */
final class StartupApply {

  private final Path file;
  private final String yaml;
  private final java.util.List<String> names;

  private StartupApply(Path file, String yaml, java.util.List<String> names) {
    this.file = file;
    this.yaml = yaml;
    this.names = java.util.List.copyOf(names);
  }

  /**
   * Reads {@code file} and validates its deployments here, before any node starts (as {@code kiln deploy} does);
   * pipelines are validated by the apply itself, against the cluster's deployments.
   *
   * @throws CliException naming {@code --apply} and the file, with every problem (line and column)
   */
  static StartupApply read(Path file) {
    Path abs = file.toAbsolutePath().normalize();
    String yaml;
    try {
      if (!Files.isRegularFile(abs)) {
        throw new CliException("--apply: no such file: " + file);
      }
      if (Files.size(abs) > DeployCommand.MAX_YAML_BYTES) {
        throw new CliException("--apply: " + file + " is larger than " + DeployCommand.MAX_YAML_BYTES + " bytes");
      }
      yaml = Files.readString(abs);
    } catch (IOException e) {
      throw new CliException("--apply: cannot read " + file + ": " + e.getMessage());
    }
    java.util.List<String> names;
    try {
      names = new DeploymentLoader().load(yaml, abs).deployments().stream().map(d -> d.name()).toList();
    } catch (DeploymentValidationException v) {
      throw new CliException("--apply: " + v.getMessage());
    }
    return new StartupApply(abs, yaml, names);
  }

  /** The file's deployments, in order (the node warms them before it reports ready). */
  java.util.List<String> deploymentNames() {
    return names;
  }

  Path file() {
    return file;
  }

  /** Applies the file on {@code node}; false (the problems on {@code err}) if it could not be applied. */
  boolean applyOn(KilnNode node, PrintWriter out, PrintWriter err) {
    try {
      Applications.Result r = new Applications(node.runtime(), node.serve(), node.pipelines())
          .apply(yaml, file, false, true).toCompletableFuture().join();
      out.print(r.deployments().plan().toText());
      r.prunedPipelines().forEach(p -> out.println("kiln: pruned pipeline " + p + " (not in " + file + ")"));
      r.prunedDeployments().forEach(d -> out.println("kiln: pruned deployment " + d + " (not in " + file + ")"));
      out.println("kiln: applied " + file + ": " + r.deployments().deployments().size() + " deployment(s), "
          + r.pipelines().size() + " pipeline(s)");
      out.flush();
      return true;
    } catch (CompletionException e) {
      if (e.getCause() instanceof DeploymentValidationException v) {
        RefusedApply.lines("kiln: --apply " + file, v.problems(), "this cluster").forEach(err::println);
      } else {
        err.println("kiln: --apply " + file + " failed: " + UpCommand.rootMessage(e));
      }
      err.flush();
      return false;
    }
  }
}
