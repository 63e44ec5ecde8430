package io.kiln.pools.spec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.ModelSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The schema is the record's, and docs/yaml.md's model-field table is the schema's: regenerate it with
 * {@code java -cp model-pools/target/classes io.kiln.pools.spec.ModelFieldsTable docs/yaml.md} from the repository root.
 */
class ModelFieldsTableTest {

  private static final Path DOC = Path.of("..", "docs", "yaml.md");

  @Test
  void theSchemaNamesEveryComponentOfTheRecordInOrder() {
    assertThat(ModelFields.ALL).extracting(ModelField::component).containsExactlyElementsOf(
        Arrays.stream(ModelSpec.class.getRecordComponents()).map(c -> c.getName()).toList());
    assertThat(ModelFields.ALL).extracting(ModelField::yaml).doesNotHaveDuplicates();
  }

  @Test
  void theDocsTableIsTheSchemas() throws Exception {
    String doc = Files.readString(DOC);

    assertThat(ModelFieldsTable.current(doc)).as("docs/yaml.md's model-field table differs from ModelFields; run"
        + " ModelFieldsTable.main (see this test's class comment)").isEqualTo(ModelFieldsTable.render());
  }

  @Test
  void aChangedSchemaWouldFailTheCheck() throws Exception {
    String doc = Files.readString(DOC);
    String stale = doc.replace("| `model.streaming` |", "| `model.stream` |");

    assertThat(stale).isNotEqualTo(doc);
    assertThat(ModelFieldsTable.current(stale)).isNotEqualTo(ModelFieldsTable.render());
    assertThat(ModelFieldsTable.current(ModelFieldsTable.replaceIn(stale))).isEqualTo(ModelFieldsTable.render());
  }

  @Test
  void everyFieldHasARowWithItsDocAndOwner() {
    List<String> rows = ModelFieldsTable.render().lines().skip(2).toList();

    assertThat(rows).hasSize(ModelFields.ALL.size());
    assertThat(rows).anySatisfy(r -> assertThat(r).startsWith("| `model.python` | section |").contains("| Python |"));
    assertThat(rows).anySatisfy(r -> assertThat(r).startsWith("| `model.threads.intra_op` | integer, 1..1024 |"));
    assertThat(rows).anySatisfy(r -> assertThat(r).startsWith("| `sequence` | section |"));
    assertThat(rows).allSatisfy(r -> assertThat(r).doesNotEndWith("|  |"));
  }

  @Test
  void aDocWithoutMarkersIsRefused() {
    assertThatThrownBy(() -> ModelFieldsTable.replaceIn("# no table\n")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("markers");
  }
}
