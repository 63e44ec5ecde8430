package io.kiln.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.kiln.pipelines.jobs.JobLoader;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.Problem;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kiln job submit|status|logs|cancel|resume|list}: batch jobs over datasets. {@code submit} validates
 * the job file here first (every problem with line and column; nothing is sent when there is one), then
 * sends it to the node, which reads it again and coordinates the job.
 */
@Command(name = "job", description = "Run and watch batch jobs over datasets.",
    subcommands = {JobCommand.Submit.class, JobCommand.Status.class, JobCommand.Logs.class, JobCommand.Cancel.class,
        JobCommand.Resume.class, JobCommand.ListJobs.class})
final class JobCommand implements Runnable {

  @Spec
  CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  @Command(name = "submit", description = "Start a job from a job file (see docs/jobs.md).")
  static final class Submit implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "JOB.yaml")
    Path file;

    @Mixin
    ClientOptions client = new ClientOptions();

    @Override
    public Integer call() throws IOException {
      Path abs = file.toAbsolutePath().normalize();
      if (!Files.isRegularFile(abs)) {
        throw new CliException("no such file: " + file);
      }
      if (Files.size(abs) > JobLoader.MAX_FILE_BYTES) {
        throw new CliException(file + " is larger than " + JobLoader.MAX_FILE_BYTES + " bytes");
      }
      String yaml = Files.readString(abs);
      try {
        new JobLoader().load(yaml, abs);
      } catch (DeploymentValidationException v) {
        printProblems(v.problems().stream().map(Problem::toString).toList());
        return 1;
      }
      try {
        JsonNode r = client.client().postYaml("api/v1/jobs?" + ManagementClient.query("source", abs.toString()), yaml);
        spec.commandLine().getOut().println("job " + r.path("job_id").asText() + " started: "
            + r.path("inputs").asInt() + " inputs through " + r.path("target").asText() + " → "
            + r.path("output").asText() + "; see ./kiln job status " + r.path("job_id").asText());
        return 0;
      } catch (CliException e) {
        if (e.body() != null && e.body().has("problems")) {
          java.util.List<String> lines = new java.util.ArrayList<>();
          for (JsonNode p : e.body().get("problems")) {
            lines.add(p.path("file").asText() + ":" + p.path("line").asInt() + ":" + p.path("column").asInt() + ": "
                + (p.path("path").asText().isEmpty() ? "" : p.path("path").asText() + ": ") + p.path("message").asText());
          }
          printProblems(lines);
          return 1;
        }
        throw e;
      }
    }

    private void printProblems(java.util.List<String> problems) {
      PrintWriter err = spec.commandLine().getErr();
      err.println(file + " is invalid; no job was started:");
      problems.forEach(p -> err.println("  " + p));
    }
  }

  /** A subcommand about one job: its id, the node to ask, and the job's path in the management API. */
  abstract static class OnJob implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "ID")
    String id;

    @Mixin
    ClientOptions client = new ClientOptions();

    String path(String suffix) {
      return "api/v1/jobs/" + encode(id) + suffix;
    }
  }

  @Command(name = "status", description = "Show a job's progress: done/failed/total, rate, ETA, failures by cause.")
  static final class Status extends OnJob {
    @Option(names = "--json", description = "print the status as JSON")
    boolean json;


    @Override
    public Integer call() throws Exception {
      JsonNode s = client.client().get(path(""));
      PrintWriter out = spec.commandLine().getOut();
      if (json) {
        out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(s));
      } else {
        out.print(render(s));
      }
      return 0;
    }
  }

  @Command(name = "logs", description = "Print a job's latest log lines.")
  static final class Logs extends OnJob {
    @Override
    public Integer call() {
      JsonNode s = client.client().get(path("/logs"));
      s.path("logs").forEach(l -> spec.commandLine().getOut().println(l.asText()));
      return 0;
    }
  }

  @Command(name = "cancel", description = "Stop a job: nothing new starts; results already written stay.")
  static final class Cancel extends OnJob {
    @Override
    public Integer call() {
      client.client().post(path("/cancel"));
      spec.commandLine().getOut().println("cancel of job " + id + " requested; see ./kiln job status " + id);
      return 0;
    }
  }

  @Command(name = "resume", description = "Run a job again: only the inputs without a result.")
  static final class Resume extends OnJob {
    @Override
    public Integer call() {
      client.client().post(path("/resume"));
      spec.commandLine().getOut().println("job " + id + " resumed; see ./kiln job status " + id);
      return 0;
    }
  }

  @Command(name = "list", description = "List jobs, newest first.")
  static final class ListJobs implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    ClientOptions client = new ClientOptions();

    @Override
    public Integer call() {
      JsonNode r = client.client().get("api/v1/jobs");
      java.util.List<java.util.List<String>> rows = new java.util.ArrayList<>();
      rows.add(java.util.List.of("ID", "STATE", "DONE", "FAILED", "TOTAL", "TARGET", "COORDINATOR"));
      for (JsonNode j : r.path("jobs")) {
        rows.add(java.util.List.of(j.path("id").asText(), j.path("state").asText(), j.path("done").asText(),
            j.path("failed").asText(), j.path("total").asText(), j.path("target").asText(),
            j.path("coordinator").asText()));
      }
      spec.commandLine().getOut().print(table(rows));
      return 0;
    }
  }

  static String encode(String id) {
    return java.net.URLEncoder.encode(id, java.nio.charset.StandardCharsets.UTF_8).replace("+", "%20");
  }

  static String table(java.util.List<java.util.List<String>> rows) {
    int[] w = new int[rows.get(0).size()];
    rows.forEach(r -> {
      for (int i = 0; i < r.size(); i++) {
        w[i] = Math.max(w[i], r.get(i).length());
      }
    });
    StringBuilder out = new StringBuilder();
    for (var r : rows) {
      for (int i = 0; i < r.size(); i++) {
        out.append(i + 1 < r.size() ? String.format(Locale.ROOT, "%-" + (w[i] + 2) + "s", r.get(i)) : r.get(i));
      }
      out.append('\n');
    }
    return out.toString();
  }

  /** A status for a person: a progress bar, counts, rate, ETA, failures by cause, results by node. */
  static String render(JsonNode s) {
    int total = Math.max(0, s.path("total").asInt());
    int done = s.path("done").asInt();
    int failed = s.path("failed").asInt();
    StringBuilder out = new StringBuilder();
    out.append("job ").append(s.path("id").asText()).append(" (").append(s.path("target").asText()).append("): ")
        .append(s.path("state").asText()).append('\n');
    out.append(bar(done, failed, total, 40)).append(String.format(Locale.ROOT, " %d/%d done, %d failed, %d in flight%n",
        done, total, failed, s.path("inFlight").asInt()));
    long eta = s.path("etaSeconds").asLong(-1);
    out.append(String.format(Locale.ROOT, "rate %.1f inputs/s, ETA %s, %d already done when it started%n",
        s.path("rowsPerSecond").asDouble(), eta < 0 ? "unknown" : eta + " s", s.path("skipped").asInt()));
    if (s.path("failuresByCause").size() > 0) {
      out.append("failed attempts by cause:");
      s.path("failuresByCause").fields().forEachRemaining(e -> out.append(' ').append(e.getKey()).append('=')
          .append(e.getValue().asLong()));
      out.append('\n');
    }
    if (s.path("resultsByNode").size() > 0) {
      out.append("results by node:");
      s.path("resultsByNode").fields().forEachRemaining(e -> out.append(' ').append(e.getKey()).append('=')
          .append(e.getValue().asLong()));
      out.append('\n');
    }
    out.append("output ").append(s.path("output").asText()).append(", coordinated by ")
        .append(s.path("coordinator").asText()).append('\n');
    if (!s.path("error").asText().isEmpty()) {
      out.append(s.path("error").asText()).append('\n');
    }
    return out.toString();
  }

  static String bar(int done, int failed, int total, int width) {
    if (total <= 0) {
      return "[" + " ".repeat(width) + "]";
    }
    int d = (int) ((long) done * width / total);
    int f = Math.min(width - d, (int) Math.ceil((double) failed * width / total));
    return "[" + "#".repeat(d) + "x".repeat(f) + ".".repeat(width - d - f) + "] "
        + String.format(Locale.ROOT, "%3d%%", (long) done * 100 / total);
  }
}
