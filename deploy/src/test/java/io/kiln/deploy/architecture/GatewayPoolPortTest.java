package io.kiln.deploy.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import io.kiln.deploy.node.PoolsDirectory;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The gateway and the control plane reach pools only through the gateway's port ({@code
 * io.kiln.gateway.spi.PoolDirectory} for inference, {@code PoolAdmin} for the control plane's repository extension and
 * dashboard): none of their classes uses the pool client or the load board, which stay behind the node's adapter
 * ({@link PoolsDirectory}).
 */
@Tag("slow")
class GatewayPoolPortTest {

  private static final JavaClasses MAIN = new ClassFileImporter()
      .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
      .withImportOption(location -> !location.contains("-tests.jar"))
      .importPackages("io.kiln.gateway", "io.kiln.control", "io.kiln.deploy.node");

  private static ArchRule onlyThroughThePort(String packages) {
    return noClasses().that().resideInAPackage(packages)
        .should().dependOnClassesThat().belongToAnyOf(PoolClient.class, PoolLoadBoard.class)
        .because("the gateway's inference and the control plane's repository and dashboard code reach pools through"
            + " the gateway's SPI port");
  }

  @Test
  void noGatewayClassUsesThePoolClientOrTheLoadBoard() {
    onlyThroughThePort("io.kiln.gateway..").check(MAIN);
  }

  @Test
  void noControlPlaneClassUsesThePoolClientOrTheLoadBoard() {
    onlyThroughThePort("io.kiln.control..").check(MAIN);
  }

  @Test
  void canaryTheRuleCatchesAClassThatDoes() {
    assertThatThrownBy(() -> onlyThroughThePort("io.kiln.deploy.node..").check(MAIN))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining(PoolsDirectory.class.getName());
  }
}
