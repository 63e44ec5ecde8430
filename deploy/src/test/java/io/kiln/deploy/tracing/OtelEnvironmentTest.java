package io.kiln.deploy.tracing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.kiln.deploy.OtlpReceiver;
import io.kiln.pools.trace.Spans;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The standard {@code OTEL_*} variables as a node reads them, and their effect on what a real OTLP/HTTP receiver
 * (the test's {@link OtlpReceiver}) gets from the SDK.
 */
class OtelEnvironmentTest {

  @Test
  void defaultsAreServiceKilnAndParentBasedAlwaysOn() {
    OtelEnvironment e = OtelEnvironment.from(Map.of());
    assertThat(e.resource()).containsExactlyEntriesOf(Map.of("service.name", "kiln"));
    assertThat(e.samplerDescription()).isEqualTo("parentbased_always_on");
    assertThat(e.attributes("kiln-0").asMap()).hasSize(2);
  }

  @Test
  void resourceAttributesArePercentDecodedAndServiceNameWins() {
    OtelEnvironment e = OtelEnvironment.from(Map.of(
        "OTEL_RESOURCE_ATTRIBUTES", "service.name=ignored, deployment.environment=prod,team=ml%20platform",
        "OTEL_SERVICE_NAME", "kiln-eu"));
    assertThat(e.resource()).containsEntry("service.name", "kiln-eu").containsEntry("deployment.environment", "prod")
        .containsEntry("team", "ml platform");
    assertThat(OtelEnvironment.from(Map.of("OTEL_TRACES_SAMPLER", "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG", "0.25")).samplerDescription()).isEqualTo("parentbased_traceidratio(0.25)");
  }

  @Test
  void invalidValuesNameTheirVariable() {
    assertThatThrownBy(() -> OtelEnvironment.from(Map.of("OTEL_TRACES_SAMPLER", "sometimes")))
        .hasMessageContaining("OTEL_TRACES_SAMPLER must be one of").hasMessageContaining("'sometimes'");
    assertThatThrownBy(() -> OtelEnvironment.from(Map.of("OTEL_TRACES_SAMPLER", "traceidratio",
        "OTEL_TRACES_SAMPLER_ARG", "1.5"))).hasMessageContaining("OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1");
    assertThatThrownBy(() -> OtelEnvironment.from(Map.of("OTEL_TRACES_SAMPLER", "traceidratio",
        "OTEL_TRACES_SAMPLER_ARG", "half"))).hasMessageContaining("OTEL_TRACES_SAMPLER_ARG");
    assertThatThrownBy(() -> OtelEnvironment.from(Map.of("OTEL_RESOURCE_ATTRIBUTES", "team")))
        .hasMessageContaining("OTEL_RESOURCE_ATTRIBUTES: 'team' is not key=value");
  }

  @Test
  void theReceiverGetsTheConfiguredResourceAndTheSamplerDecides() {
    try (OtlpReceiver receiver = new OtlpReceiver()) {
      Map<String, String> env = Map.of("OTEL_SERVICE_NAME", "kiln-test",
          "OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=staging,service.instance.id=pod-7");
      try (OtelSpans spans = OtelSpans.start(receiver.endpoint(), "kiln-0", OtelEnvironment.from(env))) {
        Spans.Span s = spans.start("infer", null, null, true);
        s.end();
        spans.flush(Duration.ofSeconds(10));
        String trace = s.context().traceId();
        await().atMost(Duration.ofSeconds(30)).until(() -> !receiver.spans(trace).isEmpty());
        OtlpReceiver.Received got = receiver.spans(trace).get(0);
        assertThat(got.service()).isEqualTo("kiln-test");
        assertThat(got.serviceInstance()).isEqualTo("pod-7");
        assertThat(got.resource()).containsEntry("deployment.environment", "staging");
      }
      // always_off: a root span is not sampled and nothing reaches the receiver; a sampled marker span exported
      // afterwards (and received) shows the receiver was listening all along.
      int before = receiver.spans().size();
      try (OtelSpans off = OtelSpans.start(receiver.endpoint(), "kiln-0",
          OtelEnvironment.from(Map.of("OTEL_TRACES_SAMPLER", "always_off")))) {
        Spans.Span dropped = off.start("dropped", null, null, true);
        assertThat(dropped.context().sampled()).isFalse();
        dropped.end();
        off.flush(Duration.ofSeconds(10));
      }
      try (OtelSpans on = OtelSpans.start(receiver.endpoint(), "kiln-0", OtelEnvironment.from(Map.of()))) {
        Spans.Span marker = on.start("marker", null, null, true);
        marker.end();
        on.flush(Duration.ofSeconds(10));
        String trace = marker.context().traceId();
        await().atMost(Duration.ofSeconds(30)).until(() -> !receiver.spans(trace).isEmpty());
      }
      assertThat(receiver.spans()).hasSize(before + 1).last().extracting(OtlpReceiver.Received::name)
          .isEqualTo("marker");
    }
  }
}
