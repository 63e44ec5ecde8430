package io.kiln.serve;

import static io.kiln.serve.Specs.MINIMAL;
import static io.kiln.serve.Specs.onlyProblem;
import static io.kiln.serve.Specs.problems;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.BatchingSpec;
import io.kiln.pools.HealthSpec;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.QueueSpec;
import org.junit.jupiter.api.Test;

/** Field-level problems common to every section: unknown, missing, wrong type, names and versions. */
class FieldValidationTest {

  @Test
  void minimalDeploymentLoadsWithDefaults() {
    DeploymentSpec s = Specs.single(MINIMAL);
    assertThat(s.id()).isEqualTo("mlp@1");
    assertThat(s.batching()).isEqualTo(BatchingSpec.DEFAULT);
    assertThat(s.queue()).isEqualTo(QueueSpec.DEFAULT);
    assertThat(s.health()).isEqualTo(HealthSpec.DEFAULT);
    assertThat(s.autoscaling()).isEmpty();
    assertThat(s.pool().workerResources()).isEqualTo(PoolPlacement.DEFAULT_WORKER_RESOURCES);
    assertThat(s.pool().maxRestarts()).isEqualTo(PoolPlacement.DEFAULT_MAX_RESTARTS);
    assertThat(s.pool().nodeSelector()).isEmpty();
    assertThat(s.model().warmupBatchSizes()).isEqualTo(ModelSpec.DEFAULT_WARMUP_BATCH_SIZES);
    assertThat(s.model().intraOpThreads()).isZero();
    assertThat(s.model().interOpThreads()).isZero();
    assertThat(s.model().builtinName()).contains("identity");
  }

  @Test
  void unknownFieldSuggestsTheNearMiss() {
    String yaml = MINIMAL.replace("    version: \"1\"\n", "    version: \"1\"\n    verison: \"2\"\n");
    onlyProblem(yaml, 4, 5, "deployments[0].verison", "unknown field 'verison'; did you mean 'version'?");
  }

  @Test
  void unknownFieldSuggestsSnakeCaseForCamelCase() {
    String yaml = MINIMAL.replace("workers_per_node: 2", "workersPerNode: 2");
    var problems = problems(yaml);
    assertThat(problems).extracting(Problem::toString).contains(
        "app.yaml:10:7: deployments[0].pool.workersPerNode: unknown field 'workersPerNode'; "
            + "did you mean 'workers_per_node'?");
  }

  @Test
  void unknownFieldFarFromAnyListsTheKnownOnes() {
    String yaml = MINIMAL + "    colour: red\n";
    onlyProblem(yaml, 11, 5, "deployments[0].colour",
        "unknown field 'colour'; expected one of: name, version, queue, batching, autoscaling, health, repository, model, pool, sequence");
  }

  @Test
  void wrongTypeStringWhereNumber() {
    onlyProblem(MINIMAL.replace("workers_per_node: 2", "workers_per_node: two"), 10, 25,
        "deployments[0].pool.workers_per_node", "expected an integer, got a string 'two'");
    // Quoting makes it a string even if it looks like a number.
    onlyProblem(MINIMAL.replace("workers_per_node: 2", "workers_per_node: \"2\""), 10, 25,
        "deployments[0].pool.workers_per_node", "expected an integer, got a string '2'");
    onlyProblem(MINIMAL.replace("workers_per_node: 2", "workers_per_node: 2.5"), 10, 25,
        "deployments[0].pool.workers_per_node", "expected an integer, got the number 2.5");
  }

  @Test
  void wrongTypeMappingListAndScalar() {
    onlyProblem(MINIMAL.replace("  - name: mlp", "  - name: [mlp]"), 2, 11,
        "deployments[0].name", "expected a string, got a list");
    onlyProblem(MINIMAL + "    batching: 8\n", 11, 15, "deployments[0].batching", "expected a mapping, got the number 8");
    onlyProblem(MINIMAL.replace("      inputs:  [{name: input,  datatype: FP32, shape: [-1, 4]}]",
            "      inputs:  {name: input,  datatype: FP32, shape: [-1, 4]}"), 7, 16,
        "deployments[0].model.inputs", "expected a list, got a mapping");
    onlyProblem(MINIMAL.replace("  - name: mlp", "  - name: true"), 2, 11,
        "deployments[0].name", "expected a string, got a boolean (true)");
  }

  @Test
  void missingRequiredFieldIsReportedAtItsMapping() {
    onlyProblem(MINIMAL.replace("    version: \"1\"\n", ""), 2, 5, "deployments[0].version",
        "missing required field 'version'");
    String noModel = MINIMAL.substring(0, MINIMAL.indexOf("    model:")) + "    pool:\n      workers_per_node: 2\n";
    onlyProblem(noModel, 2, 5, "deployments[0].model", "missing required field 'model'");
    onlyProblem(MINIMAL.replace("      engine: Builtin\n", ""), 5, 7, "deployments[0].model.engine",
        "missing required field 'engine'");
    onlyProblem(MINIMAL.replace("{name: input,  datatype: FP32, shape: [-1, 4]}", "{name: input, shape: [-1, 4]}"),
        7, 17, "deployments[0].model.inputs[0].datatype", "missing required field 'datatype'");
  }

  @Test
  void requiredFieldWithoutValue() {
    onlyProblem(MINIMAL.replace("    version: \"1\"", "    version:"), 3, 13, "deployments[0].version",
        "'version' needs a value");
  }

  @Test
  void invalidNames() {
    onlyProblem(MINIMAL.replace("name: mlp", "name: My_Model"), 2, 11, "deployments[0].name",
        "'My_Model' is not a valid name: use 1 to 63 lowercase letters, digits and '-'");
    onlyProblem(MINIMAL.replace("name: mlp", "name: -mlp"), 2, 11, "deployments[0].name", "is not a valid name");
    onlyProblem(MINIMAL.replace("name: mlp", "name: " + "a".repeat(64)), 2, 11, "deployments[0].name",
        "is not a valid name");
    assertThat(Specs.single(MINIMAL.replace("name: mlp", "name: " + "a".repeat(63))).name()).hasSize(63);
  }

  @Test
  void invalidVersions() {
    onlyProblem(MINIMAL.replace("version: \"1\"", "version: \"1 beta\""), 3, 14, "deployments[0].version",
        "'1 beta' is not a valid version: use 1 to 32 letters, digits, '.', '_' or '-'");
    onlyProblem(MINIMAL.replace("version: \"1\"", "version: v1/2"), 3, 14, "deployments[0].version",
        "'v1/2' is not a valid version");
    onlyProblem(MINIMAL.replace("version: \"1\"", "version: a@b"), 3, 14, "deployments[0].version",
        "'a@b' is not a valid version");
  }

  @Test
  void unquotedNumericVersionsKeepTheirText() {
    assertThat(Specs.single(MINIMAL.replace("version: \"1\"", "version: 1")).version()).isEqualTo("1");
    assertThat(Specs.single(MINIMAL.replace("version: \"1\"", "version: 1.10")).version()).isEqualTo("1.10");
  }

  @Test
  void duplicateDeploymentNameAndVersion() {
    String second = MINIMAL.substring(MINIMAL.indexOf("  - name: mlp"));
    onlyProblem(MINIMAL + second, 11, 11, "deployments[1].name",
        "duplicate deployment mlp@1 (also deployments[0]); change the name or the version");
    var specs = Specs.LOADER.load(MINIMAL + second.replace("version: \"1\"", "version: \"2\""), Specs.SOURCE);
    assertThat(specs.deployments()).extracting(DeploymentSpec::id).containsExactly("mlp@1", "mlp@2");
  }

  @Test
  void aDeploymentThatIsNotAMapping() {
    onlyProblem("deployments:\n  - mlp\n", 2, 5, "deployments[0]", "expected a mapping, got a string 'mlp'");
  }
}
