package io.kiln.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import io.kiln.serve.DeploymentLoader;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.Problem;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kiln deploy FILE.yaml [--dry-run]}: validate, plan and apply deployments. The file is validated
 * here first (every problem with line and column, no node needed), then sent to the node, which validates
 * it again, plans it on the cluster and applies it (or refuses it at once, exit 1, where no node of the cluster could
 * ever host one of its deployments; see {@link io.kiln.serve.ServeController.Unplaceable}). {@code --prune} makes the
 * file the whole truth
 * ({@code POST /api/v1/deployments?prune=true}); {@code --wait} then polls until the file's versions are READY.
 */
@Command(name = "deploy", description = "Deploy (or with --dry-run, plan) the deployments in a YAML file;"
    + " --prune deletes what the file no longer declares, --wait blocks until it serves.")
final class DeployCommand implements Callable<Integer> {

  /** Same cap the server applies; refused here before reading a huge file. */
  static final long MAX_YAML_BYTES = DeploymentLoader.DEFAULT_MAX_BYTES;

  @Spec
  CommandSpec spec;

  @Parameters(index = "0", paramLabel = "FILE.yaml")
  Path file;

  @Option(names = "--dry-run", description = "print the plan (which pools on which nodes) and change nothing")
  boolean dryRun;

  @Option(names = "--prune", description = "delete stored deployments and pipelines absent from the file (the file"
      + " is the whole truth; internal _... pools are kept); with --dry-run, list what would be deleted")
  boolean prune;

  @Option(names = "--wait", description = "block until every deployment of the file is READY (exit 0), one is"
      + " FAILED (exit 1) or --timeout passes (exit 1)")
  boolean await;

  @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "600",
      description = "how long --wait waits (default: ${DEFAULT-VALUE})")
  long timeoutSeconds;

  @Mixin
  ClientOptions client = new ClientOptions();

  @Override
  public Integer call() throws IOException, InterruptedException {
    if (timeoutSeconds < 1) {
      throw new CliException("--timeout must be at least 1 second, got " + timeoutSeconds);
    }
    PrintWriter out = spec.commandLine().getOut();
    Path abs = file.toAbsolutePath().normalize();
    if (!Files.isRegularFile(abs)) {
      throw new CliException("no such file: " + file);
    }
    if (Files.size(abs) > MAX_YAML_BYTES) {
      throw new CliException(file + " is larger than " + MAX_YAML_BYTES + " bytes");
    }
    String yaml = Files.readString(abs);
    Map<String, String> versions = new LinkedHashMap<>();
    try {
      new DeploymentLoader().load(yaml, file).deployments().forEach(d -> versions.put(d.name(), d.version()));
    } catch (DeploymentValidationException v) {
      printProblems(v.problems());
      return 1;
    }
    String path = "api/v1/deployments?" + ManagementClient.query("source", abs.toString())
        + (dryRun ? "&dry_run=true" : "") + (prune ? "&prune=true" : "");
    ManagementClient management = client.client();
    try {
      JsonNode result = management.postYaml(path, yaml);
      out.print(result.path("planText").asText(""));
      printPruned(out, result.path("pruned"));
      out.println(dryRun ? "dry run: nothing was changed" : "applied " + result.path("deployments").size()
          + " deployment(s); see ./kiln status");
      if (await && !dryRun && !versions.isEmpty()) {
        out.println("waiting up to " + timeoutSeconds + " s for " + versions.size() + " deployment(s):");
        out.flush();
        DeploymentWait.Outcome o = new DeploymentWait(management, out, System::nanoTime)
            .await(versions, Duration.ofSeconds(timeoutSeconds), spec.commandLine().getErr());
        return o == DeploymentWait.Outcome.READY ? 0 : 1;
      }
      return 0;
    } catch (CliException e) {
      if (e.body() != null && e.body().has("problems")) {
        printProblems(serverProblems(e.body().get("problems")));
        return 1;
      }
      throw e;
    }
  }

  private void printPruned(PrintWriter out, JsonNode pruned) {
    if (pruned.isMissingNode()) {
      return;
    }
    String verb = dryRun ? "would delete" : "deleted";
    List<String> lines = new ArrayList<>();
    pruned.path("pipelines").forEach(p -> lines.add("prune: " + verb + " pipeline " + p.asText()));
    pruned.path("deployments").forEach(d -> lines.add("prune: " + verb + " deployment " + d.asText()));
    if (lines.isEmpty()) {
      out.println("prune: nothing to delete");
    }
    lines.forEach(out::println);
  }

  /** The file's problems, or the cluster's where no node could ever host a deployment of it (the node's refusal). */
  private void printProblems(List<Problem> problems) {
    PrintWriter err = spec.commandLine().getErr();
    RefusedApply.lines(file, problems, "this cluster").forEach(err::println);
  }

  /** The node's problems, printed like the local ones. */
  private static List<Problem> serverProblems(JsonNode problems) {
    List<Problem> out = new ArrayList<>();
    for (JsonNode p : problems) {
      out.add(new Problem(p.path("file").asText(), Math.max(1, p.path("line").asInt()),
          Math.max(1, p.path("column").asInt()), p.path("path").asText(), p.path("message").asText()));
    }
    return out;
  }
}
