package io.kiln.deploy;

import io.kiln.pipelines.PipelineFile;
import io.kiln.pipelines.PipelineLoader;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.Problem;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kiln validate FILE.yaml}: the checks {@code kiln deploy} (the node's {@code Applications}) applies to a
 * deployment file, run here with no node, for CI. The same reader ({@link PipelineLoader}, which reads the
 * deployments with the serve module's loader) parses the file once and reports every problem with line and column.
 * What needs a cluster is not checked and the summary says so: placement on nodes (their resources and GPUs),
 * deployments an infer step names that are only in the cluster (declare them with {@code --known}), and user step
 * classes that a node loads from its steps folder.
 */
@Command(name = "validate", description = "Check a deployment file offline (no node needed): every problem with"
    + " line and column; exit code 1 if there is any.")
final class ValidateCommand implements Callable<Integer> {

  static final String SKIPPED = "not checked offline: placement on nodes (resources, GPUs; see kiln deploy"
      + " --dry-run), user step classes from a node's steps folder, deployments only in the cluster";

  @Spec
  CommandSpec spec;

  @Parameters(index = "0", paramLabel = "FILE.yaml")
  Path file;

  @Option(names = "--known", paramLabel = "DEPLOYMENT", split = ",",
      description = "a deployment already in the cluster that infer steps may name (repeatable)")
  List<String> known = List.of();

  @Override
  public Integer call() throws IOException {
    Path abs = file.toAbsolutePath().normalize();
    if (!Files.isRegularFile(abs)) {
      throw new CliException("no such file: " + file);
    }
    if (Files.size(abs) > DeployCommand.MAX_YAML_BYTES) {
      throw new CliException(file + " is larger than " + DeployCommand.MAX_YAML_BYTES + " bytes");
    }
    String yaml = Files.readString(abs);
    // Model paths resolve against the file's folder as on the node; step classes live on the node.
    PipelineLoader loader = new PipelineLoader(PipelineLoader.Options.DEFAULT.withCheckClasses(false));
    Set<String> cluster = new LinkedHashSet<>(known);
    PrintWriter out = spec.commandLine().getOut();
    try {
      PipelineFile valid = loader.load(yaml, file, cluster);
      out.println(file + " is valid: " + valid.deployments().size() + " deployment(s), "
          + valid.pipelines().size() + " pipeline(s)"
          + (valid.graphs().isEmpty() ? "" : ", " + valid.graphs().size() + " graph(s)"));
      out.println(SKIPPED);
      return 0;
    } catch (DeploymentValidationException v) {
      PrintWriter err = spec.commandLine().getErr();
      err.println(file + " is invalid: " + v.problems().size() + " problem(s):");
      v.problems().stream().map(Problem::toString).forEach(p -> err.println("  " + p));
      return 1;
    }
  }
}
