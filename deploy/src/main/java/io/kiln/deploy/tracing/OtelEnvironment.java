package io.kiln.deploy.tracing;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The OpenTelemetry SDK's standard environment variables that shape a node's spans, read as the specification
 * defines them: {@code OTEL_SERVICE_NAME} (default {@code kiln}), {@code OTEL_RESOURCE_ATTRIBUTES}
 * ({@code key=value,...}, values percent-encoded; {@code service.name} there yields to {@code OTEL_SERVICE_NAME}),
 * {@code OTEL_TRACES_SAMPLER} and {@code OTEL_TRACES_SAMPLER_ARG} (default {@code parentbased_always_on}).
 * A value the specification does not allow is an error naming the variable, never ignored.
 *
 * <p>Hand-read rather than through the SDK's autoconfigure module: that module would also build the exporter,
 * propagators and every other {@code OTEL_*} setting, while the node owns its exporter ({@code --otel-endpoint}).
 */
public record OtelEnvironment(Map<String, String> resource, Sampler sampler, String samplerDescription) {

  public static final String SERVICE_NAME = "OTEL_SERVICE_NAME";
  public static final String RESOURCE_ATTRIBUTES = "OTEL_RESOURCE_ATTRIBUTES";
  public static final String SAMPLER = "OTEL_TRACES_SAMPLER";
  public static final String SAMPLER_ARG = "OTEL_TRACES_SAMPLER_ARG";

  public OtelEnvironment {
    resource = Map.copyOf(resource);
  }

  /**
   * Reads the variables from {@code env} (the process environment, or a test's map).
   *
   * @throws IllegalArgumentException naming the variable whose value is invalid
   */
  public static OtelEnvironment from(Map<String, String> env) {
    Map<String, String> resource = new LinkedHashMap<>();
    resource.put("service.name", "kiln");
    String attrs = blankToNull(env.get(RESOURCE_ATTRIBUTES));
    if (attrs != null) {
      for (String pair : attrs.split(",")) {
        if (pair.isBlank()) {
          continue;
        }
        int eq = pair.indexOf('=');
        if (eq <= 0) {
          throw new IllegalArgumentException(RESOURCE_ATTRIBUTES + ": '" + pair.strip() + "' is not key=value");
        }
        String key = pair.substring(0, eq).strip();
        try {
          resource.put(key, URLDecoder.decode(pair.substring(eq + 1).strip(), StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(RESOURCE_ATTRIBUTES + ": the value of " + key + " is not percent-encoded: "
              + e.getMessage());
        }
      }
    }
    String service = blankToNull(env.get(SERVICE_NAME));
    if (service != null) {
      resource.put("service.name", service.strip());
    }
    String name = blankToNull(env.get(SAMPLER));
    name = name == null ? "parentbased_always_on" : name.strip().toLowerCase(Locale.ROOT);
    String arg = blankToNull(env.get(SAMPLER_ARG));
    Sampler sampler = switch (name) {
      case "always_on" -> Sampler.alwaysOn();
      case "always_off" -> Sampler.alwaysOff();
      case "traceidratio" -> Sampler.traceIdRatioBased(ratio(arg));
      case "parentbased_always_on" -> Sampler.parentBased(Sampler.alwaysOn());
      case "parentbased_always_off" -> Sampler.parentBased(Sampler.alwaysOff());
      case "parentbased_traceidratio" -> Sampler.parentBased(Sampler.traceIdRatioBased(ratio(arg)));
      default -> throw new IllegalArgumentException(SAMPLER + " must be one of always_on, always_off, traceidratio,"
          + " parentbased_always_on, parentbased_always_off, parentbased_traceidratio; got '" + env.get(SAMPLER) + "'");
    };
    return new OtelEnvironment(resource, sampler, name.endsWith("traceidratio") ? name + "(" + ratio(arg) + ")" : name);
  }

  /** The resource attributes, with the node's {@code service.instance.id} unless the environment set one. */
  public Attributes attributes(String nodeId) {
    AttributesBuilder b = Attributes.builder();
    resource.forEach(b::put);
    if (!resource.containsKey("service.instance.id")) {
      b.put("service.instance.id", nodeId);
    }
    return b.build();
  }

  // The specification's default ratio when OTEL_TRACES_SAMPLER_ARG is unset is 1.0.
  private static double ratio(String arg) {
    if (arg == null) {
      return 1.0;
    }
    double r;
    try {
      r = Double.parseDouble(arg.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(SAMPLER_ARG + " must be a ratio from 0 to 1, got '" + arg + "'");
    }
    if (!(r >= 0 && r <= 1)) {
      throw new IllegalArgumentException(SAMPLER_ARG + " must be a ratio from 0 to 1, got '" + arg + "'");
    }
    return r;
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s;
  }
}
