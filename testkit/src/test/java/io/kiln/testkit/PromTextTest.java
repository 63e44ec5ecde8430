package io.kiln.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class PromTextTest {

  private static final String TEXT = """
      # HELP kiln_gateway_requests_total Requests
      # TYPE kiln_gateway_requests_total counter
      kiln_gateway_requests_total{model="a",outcome="ok",node="n1"} 5.0
      kiln_gateway_requests_total{model="b",outcome="ok",node="n1"} 2.0
      kiln_gateway_requests_total{model="a",outcome="error",node="n1"} 1.0
      kiln_cluster_nodes{node="n1"} 3
      kiln_x_seconds_bucket{le="+Inf",msg="say \\"hi\\""} 4 1700000000000

      """;

  @Test
  void sumsTheSeriesWhoseLabelsIncludeTheGivenOnes() {
    PromText p = PromText.parse(TEXT);
    assertThat(p.sum("kiln_gateway_requests_total", Map.of("outcome", "ok"))).isEqualTo(7.0);
    assertThat(p.sum("kiln_gateway_requests_total", Map.of("model", "a"))).isEqualTo(6.0);
    assertThat(p.sum("kiln_gateway_requests_total")).isEqualTo(8.0);
    assertThat(p.sum("kiln_cluster_nodes")).isEqualTo(3.0);
    assertThat(p.sum("kiln_absent")).isEqualTo(-1);
    assertThat(p.has("kiln_cluster_nodes")).isTrue();
  }

  @Test
  void readsInfinityTimestampsAndEscapedLabelValues() {
    PromText.Sample s = PromText.parse(TEXT).samples("kiln_x_seconds_bucket", Map.of()).get(0);
    assertThat(s.labels()).containsEntry("le", "+Inf").containsEntry("msg", "say \"hi\"");
    assertThat(s.value()).isEqualTo(4.0);
  }

  @Test
  void aLineThatIsNoSampleFailsLoudly() {
    assertThatThrownBy(() -> PromText.parse("kiln_ok 1\nnot a sample line\n"))
        .hasMessageContaining("not a Prometheus sample line: not a sample line");
  }
}
