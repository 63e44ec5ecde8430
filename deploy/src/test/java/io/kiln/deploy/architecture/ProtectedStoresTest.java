package io.kiln.deploy.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaMethodCall;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import io.kiln.pipelines.CacheIndex;
import io.kiln.pipelines.graphs.Graphs;
import io.kiln.pipelines.impl.JobStore;
import io.kiln.pipelines.impl.RunStore;
import io.kiln.runtime.ClusterOptions;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.impl.cluster.HazelcastConfigs;
import io.kiln.runtime.spi.cluster.ClusterBackend;
import io.kiln.serve.impl.DesiredState;
import io.kiln.serve.impl.DrainingNodes;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Every shared map Kiln writes is classified for split-brain protection: refused below the minimum cluster size
 * ({@link HazelcastConfigs#PROTECTED_MAPS}) or left writable with a stated reason
 * ({@link HazelcastConfigs#UNPROTECTED_MAPS}). The stores of the modules above the runtime are checked by their
 * constants here (the runtime's own in its HazelcastConfigsTest); and the classes that open stores are exactly the
 * known ones, so a new store cannot appear without being classified.
 */
@Tag("slow")
class ProtectedStoresTest {

  private static final JavaClasses MAIN = new ClassFileImporter()
      .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
      .withImportOption(location -> !location.contains("-tests.jar")) // other modules' test jars on this class path
      .importPackages("io.kiln");

  @Test
  void everyStoreIsProtectedOrStatesWhyNot() {
    assertThat(HazelcastConfigs.PROTECTED_MAPS).contains(DesiredState.DEPLOYMENTS, RunStore.PIPELINES, RunStore.RUNS,
        JobStore.SPECS, JobStore.STATUS, JobStore.CONTROL, CacheIndex.MAP, Graphs.STORE);
    assertThat(HazelcastConfigs.UNPROTECTED_MAPS).containsKeys(DesiredState.STATUS, DrainingNodes.STORE);
    Set<String> both = new HashSet<>(HazelcastConfigs.PROTECTED_MAPS);
    both.retainAll(HazelcastConfigs.UNPROTECTED_MAPS.keySet());
    assertThat(both).as("protected and not").isEmpty();
    assertThat(HazelcastConfigs.UNPROTECTED_MAPS.values()).allSatisfy(why -> assertThat(why).hasSizeGreaterThan(20));
    // Vert.x's own maps, configured beside Kiln's, are classified too.
    var config = HazelcastConfigs.memberConfig("n", ClusterOptions.head("127.0.0.1", 5701).withMinClusterSize(2));
    Set<String> configured = new TreeSet<>(config.getMapConfigs().keySet());
    configured.addAll(config.getMultiMapConfigs().keySet());
    assertThat(configured).contains("__vertx.subs", "__vertx.nodeInfo");
    for (String name : configured) {
      if (!name.endsWith("*")) {
        assertThat(HazelcastConfigs.PROTECTED_MAPS.contains(name) || HazelcastConfigs.UNPROTECTED_MAPS.containsKey(name))
            .as("map %s classified", name).isTrue();
      }
    }
  }

  @Test
  void onlyTheKnownClassesOpenStores() {
    Set<String> openers = new TreeSet<>();
    for (JavaClass c : MAIN) {
      for (JavaMethodCall call : c.getMethodCallsFromSelf()) {
        String owner = call.getTargetOwner().getName();
        String method = call.getName();
        if ((owner.equals(KilnRuntime.class.getName()) && method.equals("store"))
            || (owner.equals(ClusterBackend.class.getName()) && method.equals("map"))) {
          openers.add(c.getName().replaceAll("\\$.*", ""));
        }
      }
    }
    assertThat(openers).as("classes opening shared stores; a new one: classify its store in HazelcastConfigs")
        .containsExactlyInAnyOrderElementsOf(List.of(
            "io.kiln.runtime.impl.RuntimeImpl", // ActorRegistry.MAP, GroupRecord.MAP and NAMES; store(name) for all
            "io.kiln.runtime.impl.NodeTable",
            "io.kiln.serve.impl.DesiredState",
            "io.kiln.serve.impl.DrainingNodes",
            "io.kiln.pipelines.impl.RunStore",
            "io.kiln.pipelines.impl.JobStore",
            "io.kiln.pipelines.CacheIndex",
            "io.kiln.pipelines.graphs.Graphs"));
  }
}
