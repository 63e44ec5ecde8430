package io.kiln.deploy.architecture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import io.kiln.control.ManagementApi;
import io.kiln.deploy.architecture.fixture.UsesAnotherModulesImpl;
import io.kiln.deploy.architecture.fixture.UsesApiOnly;
import io.kiln.deploy.architecture.fixture.impl.OwnImpl;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * No Kiln module uses another module's {@code impl} packages (see {@link ModuleBoundaries}). The deploy
 * module depends on every main module, so its test class path holds all their main classes; test classes
 * are not scanned. {@code loadtest} is on it too (the reliability tests send their load with it) and is scanned
 * like the rest; its pom has no Kiln dependency but the protocol, so the compiler already refuses any other Kiln
 * import there (it talks to Kiln over HTTP and gRPC only). The gateway is the data plane: none of its main classes
 * uses {@code serve} or {@code pipelines} ({@link ModuleBoundaries#dataPlane}); its pom no longer depends on them
 * either, so this guards against one coming back.
 */
@Tag("slow")
class ModuleBoundariesTest {

  private static final JavaClasses MAIN = new ClassFileImporter()
      .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
      .importPackages("io.kiln");

  /** The gateway's and the control plane's main jars only (not the test jars on this class path). */
  private static final JavaClasses PLANES = new ClassFileImporter()
      .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
      .withImportOption(location -> !location.contains("-tests.jar"))
      .importPackages("io.kiln.gateway", "io.kiln.control");

  @Test
  void noModuleUsesAnotherModulesImpl() {
    ModuleBoundaries.NO_MODULE_USES_ANOTHER_MODULES_IMPL.check(MAIN);
  }

  @Test
  void theScanSeesEveryMainModuleAndNoTests() {
    Set<String> modules = MAIN.stream().map(JavaClass::getPackageName)
        .map(p -> ModuleBoundaries.module(p).orElse("?")).collect(Collectors.toSet());
    assertThat(modules).contains("runtime", "pools", "serve", "pipelines", "gateway", "control", "deploy");
    assertThat(MAIN.stream().map(JavaClass::getName)).contains("io.kiln.runtime.impl.RuntimeImpl")
        .doesNotContain(UsesAnotherModulesImpl.class.getName(), ModuleBoundariesTest.class.getName());
  }

  @Test
  void canaryTheRuleCatchesAModuleUsingAnotherModulesImpl() {
    JavaClasses violating = new ClassFileImporter().importClasses(UsesAnotherModulesImpl.class);
    assertThatThrownBy(() -> ModuleBoundaries.NO_MODULE_USES_ANOTHER_MODULES_IMPL.check(violating))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining(UsesAnotherModulesImpl.class.getName())
        .hasMessageContaining("io.kiln.runtime.impl.RuntimeImpl");
  }

  @Test
  void theGatewayUsesNeitherServeNorPipelines() {
    assertThat(PLANES.stream().map(JavaClass::getName)).contains("io.kiln.gateway.KilnGateway",
        "io.kiln.gateway.impl.GatewayServers", ManagementApi.class.getName());
    ModuleBoundaries.THE_GATEWAY_IS_THE_DATA_PLANE.check(PLANES);
  }

  @Test
  void canaryTheDataPlaneRuleCatchesAClassThatUsesServe() {
    assertThatThrownBy(() -> ModuleBoundaries.dataPlane("io.kiln.control..").check(PLANES))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining(ManagementApi.class.getName())
        .hasMessageContaining("io.kiln.serve.ServeController");
  }

  @Test
  void apiUseAndOwnImplUseAreAllowed() {
    ModuleBoundaries.NO_MODULE_USES_ANOTHER_MODULES_IMPL.check(
        new ClassFileImporter().importClasses(UsesApiOnly.class, OwnImpl.class));
  }

  @Test
  void modulesAreThePackageSegmentAfterIoKiln() {
    assertThat(ModuleBoundaries.module("io.kiln.pipelines.impl")).contains("pipelines");
    assertThat(ModuleBoundaries.module("io.kiln.engines.pytorch.impl")).contains("engines.pytorch");
    assertThat(ModuleBoundaries.isImpl("io.kiln.pipelines.impl")).isTrue();
    assertThat(ModuleBoundaries.isImpl("io.kiln.runtime.impl.cluster")).isTrue();
    assertThat(ModuleBoundaries.isImpl("io.kiln.pipelines.impl")).isTrue();
    assertThat(ModuleBoundaries.isImpl("io.kiln.runtime.spi.codec")).isFalse();
    assertThat(ModuleBoundaries.isImpl("io.kiln.impl")).isFalse();
    assertThat(ModuleBoundaries.module("com.example.impl")).isEmpty();
  }
}
