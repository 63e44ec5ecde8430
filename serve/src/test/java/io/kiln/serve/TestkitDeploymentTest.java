package io.kiln.serve;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.DataType;
import io.kiln.testkit.Deployment;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The testkit's canonical deployment files are what serve's own reader accepts, with the settings they name. */
class TestkitDeploymentTest {

  @Test
  void theCanonicalIdentityDeploymentsLoadWithTheirSettings() {
    String file = Deployment.file(
        Deployment.identity("echo"),
        Deployment.identity("wide").version("3").tensors("input", "output", "INT64", -1, 4).workers(2, 1)
            .batching(8, 1).queue(256, 5000));
    List<DeploymentSpec> specs = Specs.LOADER.load(file, Specs.SOURCE).deployments();
    assertThat(specs).extracting(DeploymentSpec::name).containsExactly("echo", "wide");

    DeploymentSpec echo = specs.get(0);
    assertThat(echo.version()).isEqualTo("1");
    assertThat(echo.model().uri().toString()).isEqualTo("builtin:identity");
    assertThat(echo.model().inputs().get(0).name()).isEqualTo("x");
    assertThat(echo.model().inputs().get(0).shape()).containsExactly(-1, 2);
    assertThat(echo.model().outputs().get(0).name()).isEqualTo("y");

    DeploymentSpec wide = specs.get(1);
    assertThat(wide.version()).isEqualTo("3");
    assertThat(wide.model().inputs().get(0).datatype()).isEqualTo(DataType.INT64);
    assertThat(wide.model().inputs().get(0).shape()).containsExactly(-1, 4);
    assertThat(wide.batching().maxBatchSize()).isEqualTo(8);
    assertThat(wide.queue().maxQueued()).isEqualTo(256);
  }
}
