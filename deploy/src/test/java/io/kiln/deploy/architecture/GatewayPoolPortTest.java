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
import org.junit.jupiter.api.Test;

/**
 * The gateway reaches pools only through its port ({@code io.kiln.gateway.spi.PoolDirectory} for inference,
 * {@code PoolAdmin} for the management APIs and the dashboard): none of its classes uses the pool client or the load
 * board, which stay behind the node's adapter ({@link PoolsDirectory}).
 */
class GatewayPoolPortTest {

  private static final JavaClasses MAIN = new ClassFileImporter()
      .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
      .withImportOption(location -> !location.contains("-tests.jar"))
      .importPackages("io.kiln.gateway", "io.kiln.deploy.node");

  private static ArchRule onlyThroughThePort(String packages) {
    return noClasses().that().resideInAPackage(packages)
        .should().dependOnClassesThat().belongToAnyOf(PoolClient.class, PoolLoadBoard.class)
        .because("the gateway's inference, management and dashboard code reach pools through its SPI port");
  }

  @Test
  void noGatewayClassUsesThePoolClientOrTheLoadBoard() {
    onlyThroughThePort("io.kiln.gateway..").check(MAIN);
  }

  @Test
  void canaryTheRuleCatchesAClassThatDoes() {
    assertThatThrownBy(() -> onlyThroughThePort("io.kiln.deploy.node..").check(MAIN))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining(PoolsDirectory.class.getName());
  }
}
