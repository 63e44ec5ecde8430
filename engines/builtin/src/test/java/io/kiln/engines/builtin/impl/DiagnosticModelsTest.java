package io.kiln.engines.builtin.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.spi.AbstractModelRunner;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The diagnostic models are kept apart from the real built-ins, yet still valid {@code builtin:} uris. */
class DiagnosticModelsTest {

  private static ModelSpec spec(String uri) {
    return ModelSpec.builder().uri(uri).engine(ModelSpec.ENGINE_BUILTIN).input("x", DataType.FP32, -1, 2).build();
  }

  @Test
  void builtinModelsNoLongerKnowTheDiagnosticOnes() {
    assertThat(BuiltinModels.NAMES).containsExactly(BuiltinModels.IDENTITY, BuiltinModels.CHUNKS)
        .doesNotContainAnyElementsOf(DiagnosticModels.NAMES);
    assertThat(DiagnosticModels.NAMES).containsExactly("builtin:crash-on-nan", "builtin:sleep");
  }

  @ParameterizedTest
  @ValueSource(strings = {"builtin:identity", "builtin:chunks", "builtin:crash-on-nan", "builtin:sleep"})
  void everyBuiltinAndDiagnosticUriStaysValid(String uri) {
    BuiltinModels.checkName(uri);

    assertThat(spec(uri).isBuiltin()).isTrue();
  }

  @Test
  void anUnknownBuiltinNamesEveryKnownOne() {
    assertThatThrownBy(() -> spec("builtin:nope")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown built-in model 'builtin:nope', expected one of "
            + "[builtin:identity, builtin:chunks, builtin:crash-on-nan, builtin:sleep]");
  }

  @Test
  void diagnosticUrisLoadDiagnosticRunnersAndTheIdentityItsOwn() {
    try (AbstractModelRunner identity = BuiltinModels.create(spec(BuiltinModels.IDENTITY));
         AbstractModelRunner crash = BuiltinModels.create(spec(DiagnosticModels.CRASH_ON_NAN));
         AbstractModelRunner sleep = BuiltinModels.create(spec(DiagnosticModels.SLEEP))) {
      assertThat(identity.getClass()).isEqualTo(BuiltinModels.IdentityRunner.class);
      assertThat(crash.getClass().getEnclosingClass()).isEqualTo(DiagnosticModels.class);
      assertThat(sleep.getClass().getEnclosingClass()).isEqualTo(DiagnosticModels.class);
      assertThat(crash.getClass()).isNotEqualTo(sleep.getClass());
    }
  }

  @Test
  void theWarningSaysWhatTheModelDoesAndThatItIsForTestsOnly() {
    assertThat(DiagnosticModels.warning(DiagnosticModels.CRASH_ON_NAN))
        .isEqualTo("diagnostic model builtin:crash-on-nan loaded: it crashes on purpose; for reliability tests only");
    assertThat(DiagnosticModels.warning(DiagnosticModels.SLEEP))
        .isEqualTo("diagnostic model builtin:sleep loaded: it holds its worker on purpose; for overload and "
            + "queueing tests only");
  }
}
