package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The files of {@code deploy/monitoring/} through Prometheus's real {@code promtool}: both scrape configurations
 * ({@code check config}, which also checks the rule file they load), the alert rules ({@code check rules}) and
 * their unit tests ({@code test rules}: series that fire each alert and series that must not), and every query of
 * the Grafana dashboard parsed as PromQL. That the names they use are the ones Kiln exports is checked against a
 * real node in {@link MonitoringEndToEndTest}.
 */
class KilnMonitoringTest {

  private static void assertSucceeds(Promtool.Result r) {
    assertThat(r.exitCode()).as("promtool:%n%s", r.output()).isZero();
  }

  @Test
  void bothScrapeConfigurationsAreValidAndLoadTheRules() throws Exception {
    for (String config : List.of("prometheus-kubernetes.yml", "prometheus-static.yml")) {
      Promtool.Result r = Promtool.run(MonitoringFiles.PROMETHEUS, "check", "config", config);
      assertSucceeds(r);
      assertThat(r.output()).contains("SUCCESS: 1 rule files found").contains("SUCCESS: 9 rules found");
    }
  }

  @Test
  void theAlertRulesAreValidAndTheirUnitTestsPass() throws Exception {
    assertSucceeds(Promtool.run(MonitoringFiles.RULES.getParent(), "check", "rules", "kiln-alerts.yml"));
    Promtool.Result tests = Promtool.run(MonitoringFiles.RULES.getParent(), "test", "rules", "kiln-alerts.test.yml");
    assertSucceeds(tests);
    assertThat(tests.output()).contains("SUCCESS");
    String rules = MonitoringFiles.read(MonitoringFiles.RULES);
    String unitTests = MonitoringFiles.read(MonitoringFiles.RULE_TESTS);
    for (String alert : List.of("KilnHighErrorRatio", "KilnQueueNearlyFull", "KilnLatencyP99OverSlo", "KilnNodeDown",
        "KilnNodeOutOfCluster", "KilnWorkerRestartLoop", "KilnDeploymentFailed", "KilnDeploymentUnschedulable",
        "KilnLlmKvCacheExhausted")) {
      assertThat(rules).contains("alert: " + alert);
      assertThat(unitTests).as("a unit test of %s", alert).contains("alertname: " + alert);
    }
  }

  @Test
  void aRuleUnitTestCanFail(@TempDir Path dir) throws Exception {
    Files.copy(MonitoringFiles.RULES, dir.resolve("kiln-alerts.yml"));
    // The restart-loop test expects an alert for flaky: with the threshold raised, none fires.
    Files.writeString(dir.resolve("kiln-alerts.yml"), MonitoringFiles.read(MonitoringFiles.RULES)
        .replace("[15m])) >= 3", "[15m])) >= 300"));
    Files.copy(MonitoringFiles.RULE_TESTS, dir.resolve("kiln-alerts.test.yml"));
    Promtool.Result r = Promtool.run(dir, "test", "rules", "kiln-alerts.test.yml");
    assertThat(r.exitCode()).isNotZero();
    assertThat(r.output()).contains("KilnWorkerRestartLoop");
  }

  @Test
  void everyDashboardQueryIsValidPromql(@TempDir Path dir) throws Exception {
    List<String> queries = MonitoringFiles.dashboardQueries();
    assertThat(queries).hasSizeGreaterThan(15);
    // promtool parses the PromQL of recording rules: one per query, as Grafana would send it.
    List<String> lines = new ArrayList<>(List.of("groups:", "  - name: dashboard", "    rules:"));
    for (int i = 0; i < queries.size(); i++) {
      lines.add("      - record: kiln_dashboard:query_" + i);
      lines.add("        expr: '" + MonitoringFiles.asPromql(queries.get(i)).replace("'", "''") + "'");
    }
    Files.write(dir.resolve("dashboard.yml"), lines);
    Promtool.Result r = Promtool.run(dir, "check", "rules", "dashboard.yml");
    assertSucceeds(r);
    assertThat(r.output()).contains("SUCCESS: " + queries.size() + " rules found");
  }

  @Test
  void theDashboardCoversWhatOperatorsLookAt() {
    JsonNode d = MonitoringFiles.json(MonitoringFiles.DASHBOARD);
    assertThat(d.path("uid").asText()).isEqualTo("kiln-overview");
    List<String> titles = new ArrayList<>();
    d.path("panels").forEach(p -> titles.add(p.path("title").asText()));
    assertThat(titles).contains("Request rate", "Errors", "Latency p50 / p99", "Queue depth", "Batch size",
        "Worker restarts", "Nodes alive", "GPU memory used", "GPU utilisation");
    String queries = String.join("\n", MonitoringFiles.dashboardQueries());
    assertThat(queries).contains("histogram_quantile(0.5, sum by (model, le)")
        .contains("histogram_quantile(0.99, sum by (model, le)");
  }
}
