package io.kiln.pools.spec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link ModelFields#ALL} is the declared constants put in the record's order; the ordering refuses a component
 * without a field, a field without a component and a component declared twice, which is what loading
 * {@link ModelFields} checks against {@link io.kiln.pools.ModelSpec}.
 */
class ModelFieldsOrderTest {

  @Test
  void theDeclaredFieldsTakeTheComponentsOrder() {
    List<ModelField> declared = List.of(ModelFields.STREAMING, ModelFields.URI, ModelFields.ENGINE);

    assertThat(ModelFields.inOrder(declared, List.of("uri", "engine", "streaming")))
        .containsExactly(ModelFields.URI, ModelFields.ENGINE, ModelFields.STREAMING);
  }

  @Test
  void aComponentWithoutAFieldIsNamed() {
    assertThatThrownBy(() -> ModelFields.inOrder(List.of(ModelFields.URI), List.of("uri", "priority")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("ModelSpec's component priority has no field in ModelFields: every component needs one");
  }

  @Test
  void aFieldWithoutAComponentIsNamed() {
    assertThatThrownBy(() -> ModelFields.inOrder(List.of(ModelFields.URI, ModelFields.SHA256), List.of("uri")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("ModelFields declares [sha256], which ModelSpec lacks");
  }

  @Test
  void aComponentDeclaredTwiceIsNamed() {
    assertThatThrownBy(() -> ModelFields.inOrder(List.of(ModelFields.URI, ModelFields.URI), List.of("uri")))
        .isInstanceOf(IllegalStateException.class).hasMessage("ModelFields declares component uri twice");
  }

  @Test
  void allHoldsEveryConstantOnce() throws Exception {
    List<ModelField> constants = new ArrayList<>();
    for (Field f : ModelFields.class.getFields()) {
      if (f.getType() == ModelField.class) {
        constants.add((ModelField) f.get(null));
      }
    }

    assertThat(constants).hasSize(io.kiln.pools.ModelSpec.class.getRecordComponents().length);
    assertThat(ModelFields.ALL).doesNotHaveDuplicates().containsExactlyInAnyOrderElementsOf(constants);
  }
}
