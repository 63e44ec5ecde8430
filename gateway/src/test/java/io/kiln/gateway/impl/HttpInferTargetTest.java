package io.kiln.gateway.impl;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Which paths the raw infer handler takes itself, and how it decodes their segments; the rest go to the router. */
class HttpInferTargetTest {

  static Stream<Arguments> served() {
    return Stream.of(
        Arguments.of("/v2/models/mlp/infer", "mlp", null),
        Arguments.of("/v2/models/mlp/versions/2/infer", "mlp", "2"),
        Arguments.of("/v2/models/versions/infer", "versions", null),
        Arguments.of("/v2/models/infer/infer", "infer", null),
        Arguments.of("/v2/models/ml%70/infer", "mlp", null),
        Arguments.of("/v2/models/a%2Fb/versions/v%201/infer", "a/b", "v 1"),
        Arguments.of("/v2/models/a+b/infer", "a+b", null),
        Arguments.of("/v2/models/%C3%A9t%C3%A9/infer", "\u00e9t\u00e9", null),
        Arguments.of("/v2/models/m.v1/infer", "m.v1", null));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("served")
  void plainInferPathsAreServedWithTheirSegmentsDecoded(String path, String name, String version) {
    assertThat(HttpInfer.target(path)).containsExactly(name, version);
  }

  @ParameterizedTest(name = "[{index}] {0}")
  @ValueSource(strings = {"/v2/models/mlp/infer/", "/v2/models//infer", "/v2/models/infer", "/v2/models/mlp/inferx",
      "/v2/models/mlp", "/v2/models/./infer", "/v2/models/../infer", "/v2/models/%2E%2E/infer", "/v2/models/m/versions/infer",
      "/v2/models/m/versions//infer", "/v2/models/m/versions/1/2/infer", "/v2/models/m/x/1/infer", "/v2/models/m%/infer",
      "/v2/models/m%4/infer", "/v2/models/m%zz/infer", "/v2/models/%FF/infer", "/v2/models/\u00e9/infer", "/v2/models/a/b/infer",
      "/v3/models/mlp/infer", "/V2/models/mlp/infer", ""})
  void everythingElseIsTheRouters(String path) {
    assertThat(HttpInfer.target(path)).isNull();
  }
}
