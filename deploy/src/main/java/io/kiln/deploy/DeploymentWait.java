package io.kiln.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * {@code kiln deploy --wait}: polls the node until every deployment of the file serves its applied version
 * ({@code READY}), one {@code FAILED}, or the time is up. Prints a line whenever a deployment's phase changes.
 * Blocks the calling thread (the CLI's own).
 */
final class DeploymentWait {

  /** Why the wait ended. */
  enum Outcome { READY, FAILED, TIMED_OUT }

  static final Duration POLL = Duration.ofMillis(500);

  private final ManagementClient client;
  private final PrintWriter out;
  private final LongSupplier nanoClock;

  DeploymentWait(ManagementClient client, PrintWriter out, LongSupplier nanoClock) {
    this.client = client;
    this.out = out;
    this.nanoClock = nanoClock;
  }

  /**
   * Waits for {@code versions} (deployment name to the version just applied).
   *
   * @return the outcome; a FAILED or TIMED_OUT outcome's line naming the deployment(s) is printed on {@code err}
   */
  Outcome await(Map<String, String> versions, Duration timeout, PrintWriter err) throws InterruptedException {
    long deadline = nanoClock.getAsLong() + timeout.toNanos();
    Map<String, String> lastSeen = new HashMap<>();
    while (true) {
      Map<String, String> pending = new LinkedHashMap<>();
      for (Map.Entry<String, String> e : versions.entrySet()) {
        JsonNode status = client.get("api/v1/deployments/" + e.getKey()).path("status");
        String phase = status.path("phase").asText("PENDING");
        boolean current = e.getValue().equals(status.path("version").asText());
        String seen = current ? phase : "PENDING";
        if (!seen.equals(lastSeen.put(e.getKey(), seen))) {
          String detail = status.path("message").asText("");
          out.println("  " + e.getKey() + " " + e.getValue() + ": " + seen + (detail.isEmpty() ? "" : " (" + detail + ")"));
          out.flush();
        }
        if (current && "FAILED".equals(phase)) {
          err.println("kiln: deployment " + e.getKey() + " failed: " + status.path("failure").asText("(no reason given)"));
          return Outcome.FAILED;
        }
        if (!(current && "READY".equals(phase))) {
          pending.put(e.getKey(), seen);
        }
      }
      if (pending.isEmpty()) {
        out.println("all " + versions.size() + " deployment(s) ready");
        return Outcome.READY;
      }
      if (nanoClock.getAsLong() - deadline >= 0) {
        err.println("kiln: timed out after " + timeout.toSeconds() + " s; not ready: " + describe(pending));
        return Outcome.TIMED_OUT;
      }
      Thread.sleep(POLL.toMillis());
    }
  }

  private static String describe(Map<String, String> pending) {
    List<String> parts = pending.entrySet().stream().map(e -> e.getKey() + " (" + e.getValue() + ")").toList();
    return String.join(", ", parts);
  }
}
