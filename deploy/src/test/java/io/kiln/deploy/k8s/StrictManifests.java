package io.kiln.deploy.k8s;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * Kubernetes manifests read into fabric8's typed model, strictly: a field the model does not know fails, with
 * its path. (fabric8's classes keep unknown fields in {@code additionalProperties} rather than refuse them, so
 * after Jackson has bound a document every object of the model is walked and any non-empty
 * {@code additionalProperties} is an error.) Only the kinds Kiln's manifests use are known; another kind fails.
 */
final class StrictManifests {

  static final Map<String, Class<? extends HasMetadata>> KINDS = Map.ofEntries(
      Map.entry("v1/Namespace", Namespace.class),
      Map.entry("v1/ConfigMap", ConfigMap.class),
      Map.entry("v1/Service", Service.class),
      Map.entry("v1/ServiceAccount", ServiceAccount.class),
      Map.entry("apps/v1/StatefulSet", StatefulSet.class),
      Map.entry("policy/v1/PodDisruptionBudget", PodDisruptionBudget.class),
      Map.entry("rbac.authorization.k8s.io/v1/Role", Role.class),
      Map.entry("rbac.authorization.k8s.io/v1/RoleBinding", RoleBinding.class),
      Map.entry("networking.k8s.io/v1/NetworkPolicy", io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy.class),
      Map.entry("autoscaling/v2/HorizontalPodAutoscaler",
          io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler.class));

  /**
   * Kinds fabric8's model here has no class for (the Prometheus Operator's CRDs): read as
   * {@link GenericKubernetesResource}, whose fields the tests that rely on them check (MonitoringObjectsTest).
   */
  static final Set<String> GENERIC_KINDS = Set.of(
      "monitoring.coreos.com/v1/PodMonitor",
      "monitoring.coreos.com/v1/PrometheusRule");

  private static final JsonMapper JSON = JsonMapper.builder()
      .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
      .build();

  private StrictManifests() {
  }

  /** Every document of a (multi-document) YAML file, typed. */
  static List<HasMetadata> read(Path file) throws IOException {
    return read(Files.readString(file), file.toString());
  }

  static List<HasMetadata> read(String yaml, String source) {
    List<HasMetadata> out = new ArrayList<>();
    int i = 0;
    for (Object doc : new Yaml(new SafeConstructor(new LoaderOptions())).loadAll(yaml)) {
      i++;
      if (doc == null) {
        continue;
      }
      if (!(doc instanceof Map<?, ?> m)) {
        throw new IllegalArgumentException(source + " document " + i + " is not a mapping");
      }
      String key = m.get("apiVersion") + "/" + m.get("kind");
      if (GENERIC_KINDS.contains(key)) {
        out.add(JSON.convertValue(m, GenericKubernetesResource.class));
        continue;
      }
      Class<? extends HasMetadata> type = KINDS.get(key);
      if (type == null) {
        throw new IllegalArgumentException(source + " document " + i + ": unexpected kind " + key);
      }
      HasMetadata typed = JSON.convertValue(m, type);
      List<String> unknown = new ArrayList<>();
      unknownFields(typed, key, unknown);
      if (!unknown.isEmpty()) {
        throw new IllegalArgumentException(source + " document " + i + " (" + key + "): unknown field(s) " + unknown);
      }
      out.add(typed);
    }
    return out;
  }

  /** Collects the paths of fields the model did not know, below {@code o}. */
  static void unknownFields(Object o, String path, List<String> out) {
    if (o == null) {
      return;
    }
    if (o instanceof Collection<?> c) {
      int i = 0;
      for (Object e : c) {
        unknownFields(e, path + "[" + i++ + "]", out);
      }
      return;
    }
    if (o instanceof Map<?, ?> m) {
      m.forEach((k, v) -> unknownFields(v, path + "." + k, out));
      return;
    }
    if (!o.getClass().getName().startsWith("io.fabric8.")) {
      return;
    }
    for (Method g : o.getClass().getMethods()) {
      if (g.getParameterCount() != 0 || Modifier.isStatic(g.getModifiers()) || g.getDeclaringClass() == Object.class
          || !(g.getName().startsWith("get") || g.getName().startsWith("is"))) {
        continue;
      }
      Object v;
      try {
        v = g.invoke(o);
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException(g.toString(), e);
      }
      if (g.getName().equals("getAdditionalProperties")) {
        if (v instanceof Map<?, ?> extra && !extra.isEmpty()) {
          extra.keySet().forEach(k -> out.add(path + "." + k));
        }
      } else {
        unknownFields(v, path + "." + property(g.getName()), out);
      }
    }
  }

  private static String property(String getter) {
    String p = getter.startsWith("is") ? getter.substring(2) : getter.substring(3);
    return p.isEmpty() ? p : Character.toLowerCase(p.charAt(0)) + p.substring(1);
  }
}
