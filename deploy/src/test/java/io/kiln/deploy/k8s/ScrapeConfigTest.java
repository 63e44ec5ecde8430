package io.kiln.deploy.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Service;
import java.io.IOException;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

/**
 * {@code deploy/monitoring/prometheus/prometheus-kubernetes.yml} finds what the manifests run, in every overlay:
 * its DNS name is the headless Service's in the StatefulSet's namespace, that Service publishes pods before they
 * are ready (a warming pod is scraped too), and its port is the pod's gateway port "http", where {@code /metrics}
 * is served.
 */
class ScrapeConfigTest {

  @Test
  @SuppressWarnings("unchecked")
  void theKubernetesScrapeConfigTargetsEveryKilnPodsGatewayPort() throws IOException {
    Map<String, Object> config = new Yaml().load(Files.readString(ManifestsTest.repositoryRoot()
        .resolve("deploy/monitoring/prometheus/prometheus-kubernetes.yml")));
    Map<String, Object> job = ((List<Map<String, Object>>) config.get("scrape_configs")).get(0);
    assertThat(job).containsEntry("job_name", "kiln").containsEntry("metrics_path", "/metrics");
    Map<String, Object> dns = ((List<Map<String, Object>>) job.get("dns_sd_configs")).get(0);

    for (String overlay : ManifestsTest.OVERLAYS) {
      ManifestsTest.Rendered r = ManifestsTest.rendered(overlay);
      String headless = r.statefulSet().getSpec().getServiceName();
      Service svc = r.service(headless);
      assertThat(svc.getSpec().getClusterIP()).as(overlay).isEqualTo("None");
      assertThat(svc.getSpec().getPublishNotReadyAddresses()).as(overlay).isTrue();
      assertThat((List<String>) dns.get("names")).as(overlay)
          .containsExactly(headless + "." + r.namespace() + ".svc.cluster.local");
      assertThat(dns).containsEntry("type", "A")
          .containsEntry("port", ManifestsTest.containerPort(r.kiln(), "http"));
      assertThat(ManifestsTest.resolve(r.service("kiln").getSpec().getPorts().stream()
          .filter(p -> p.getName().equals("http")).findFirst().orElseThrow().getTargetPort(), r.kiln()))
          .as("the gateway Service's http port is the same port").isEqualTo(dns.get("port"));
    }
  }
}
