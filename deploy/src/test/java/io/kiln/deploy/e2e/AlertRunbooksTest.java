package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * What operators rely on beyond PromQL validity (KilnMonitoringTest runs promtool): every alert has a severity
 * Alertmanager routes ({@code critical} pages, {@code warning} does not) and a {@code runbook_url} whose anchor is
 * a section of docs/runbooks.md, every section there is an alert's; the dashboard hard-codes no job.
 */
class AlertRunbooksTest {

  private static final String RUNBOOKS = "https://github.com/kiln/kiln/blob/main/docs/runbooks.md#";

  @SuppressWarnings("unchecked")
  static List<Map<String, Object>> alerts() {
    Map<String, Object> file = new Yaml(new SafeConstructor(new LoaderOptions()))
        .load(MonitoringFiles.read(MonitoringFiles.RULES));
    List<Map<String, Object>> out = new ArrayList<>();
    for (Map<String, Object> group : (List<Map<String, Object>>) file.get("groups")) {
      for (Map<String, Object> rule : (List<Map<String, Object>>) group.get("rules")) {
        if (rule.containsKey("alert")) {
          out.add(rule);
        }
      }
    }
    return out;
  }

  /** GitHub's anchors for the {@code ## } headings: lower case, spaces to dashes, punctuation dropped. */
  static Set<String> runbookAnchors() {
    String doc = MonitoringFiles.read(ServingCluster.repositoryRoot().resolve("docs/runbooks.md"));
    return doc.lines().filter(l -> l.startsWith("## ")).map(l -> l.substring(3).trim().toLowerCase()
        .replaceAll("[^a-z0-9 _-]", "").replace(' ', '-')).collect(Collectors.toSet());
  }

  @Test
  @SuppressWarnings("unchecked")
  void everyAlertHasARoutableSeverityAndARunbookSectionAndEverySectionAnAlert() {
    List<Map<String, Object>> alerts = alerts();
    assertThat(alerts).hasSizeGreaterThanOrEqualTo(8);
    Set<String> anchors = runbookAnchors();
    for (Map<String, Object> a : alerts) {
      String name = (String) a.get("alert");
      Map<String, Object> labels = (Map<String, Object>) a.get("labels");
      Map<String, Object> annotations = (Map<String, Object>) a.get("annotations");
      assertThat(labels.get("severity")).as(name + " severity").isIn("critical", "warning");
      String url = (String) annotations.get("runbook_url");
      assertThat(url).as(name + " runbook_url").startsWith(RUNBOOKS);
      assertThat(anchors).as(name + ": docs/runbooks.md has the section its runbook_url names")
          .contains(url.substring(RUNBOOKS.length()));
    }
    assertThat(anchors).as("every runbook section belongs to an alert")
        .isEqualTo(alerts.stream().map(a -> ((String) a.get("alert")).toLowerCase()).collect(Collectors.toSet()));
  }

  @Test
  void noDashboardQueryHardCodesAJobAndTheDataSourceIsAVariable() {
    List<String> queries = MonitoringFiles.dashboardQueries();
    assertThat(queries).isNotEmpty();
    Pattern literalJob = Pattern.compile("job\\s*(=|!=|=~|!~)\\s*\"(?!\\$)");
    assertThat(queries).as("queries select the job through $job").noneMatch(q -> literalJob.matcher(q).find());
    assertThat(queries).filteredOn(q -> q.contains("kiln_") || q.contains("up{"))
        .allMatch(q -> q.contains("job=\"$job\"") || q.contains("job=~\"$job\""));
    JsonNode d = MonitoringFiles.json(MonitoringFiles.DASHBOARD);
    List<String> variables = new ArrayList<>();
    d.path("templating").path("list").forEach(v -> variables.add(v.path("name").asText() + ":" + v.path("type").asText()));
    assertThat(variables).contains("datasource:datasource").anyMatch(v -> v.startsWith("job:"));
    List<String> uids = new ArrayList<>();
    d.path("panels").forEach(p -> {
      if (p.has("datasource")) {
        uids.add(p.path("datasource").path("uid").asText());
      }
    });
    assertThat(uids).isNotEmpty().allMatch("${datasource}"::equals);
  }
}
