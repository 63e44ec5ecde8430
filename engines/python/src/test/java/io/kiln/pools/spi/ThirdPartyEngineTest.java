package io.kiln.pools.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.testsupport.EchoEngineJar;
import java.lang.management.ManagementFactory;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A third-party engine is a jar on the class path: the Echo engine ({@link EchoEngineJar}), compiled from source
 * into a real jar, is found by the registry, its spec checks run, and a pool serves a request through it.
 */
@Tag("slow")
class ThirdPartyEngineTest {

  private static final String PROVIDER = "com.example.echo.EchoEngine";

  @TempDir
  Path dir;

  @Test
  void theRegistryFindsAnEngineInAJarAfterKilnsOwnAndRunsItsSpecChecks() throws Exception {
    Path jar = EchoEngineJar.build(dir, PROVIDER);
    try (URLClassLoader loader = new URLClassLoader(new URL[] {jar.toUri().toURL()}, getClass().getClassLoader())) {
      Engines engines = Engines.load(loader);

      assertThat(engines.names()).containsExactly(ModelSpec.ENGINE_PYTORCH, ModelSpec.ENGINE_ONNX,
          ModelSpec.ENGINE_PYTHON, ModelSpec.ENGINE_BUILTIN, EchoEngineJar.NAME);
      Engine echo = engines.get(EchoEngineJar.NAME);
      assertThat(echo.getClass().getClassLoader()).isSameAs(loader);
      assertThat(echo.recognizes(EchoEngineJar.MODEL_FILE)).isTrue();
      assertThat(engines.findIgnoringCase("ECHO")).containsSame(echo);
      TensorSpec x = new TensorSpec("x", DataType.FP32, new long[] {-1, 2});
      assertThat(echo.check(new SpecFields("m", ModelSpec.FORMAT_AUTO, "", List.of(x), List.of(x), false))).isEmpty();
      assertThat(echo.check(new SpecFields("m", ModelSpec.FORMAT_AUTO, "", List.of(x), List.of(), false)))
          .containsExactly(new SpecProblem("outputs", "an Echo model doubles each input: declare one output per input"));
    }
    assertThat(Engines.installed().find(EchoEngineJar.NAME)).as("not on this JVM's class path").isEmpty();
  }

  @Test
  void anUnknownNameListsTheEnginesThereAre() {
    assertThatThrownBy(() -> Engines.installed().get("TensorFlow")).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("unknown engine 'TensorFlow', expected one of PyTorch, OnnxRuntime, Python, Builtin");
  }

  @Test
  void twoEnginesOfOneNameAreRefusedLoudly() throws Exception {
    Path jar = EchoEngineJar.servicesOnly(dir, Impostor.class.getName());
    try (URLClassLoader loader = new URLClassLoader(new URL[] {jar.toUri().toURL()}, getClass().getClassLoader())) {
      assertThatThrownBy(() -> Engines.load(loader)).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("two engines are named 'pytorch': io.kiln.engines.pytorch.PyTorchEngine and "
              + Impostor.class.getName());
    }
  }

  /** An engine whose name clashes with Kiln's PyTorch (names match ignoring case). */
  public static final class Impostor implements Engine {
    @Override
    public String name() {
      return "pytorch";
    }

    @Override
    public Capabilities capabilities() {
      return new Capabilities(false, "", false, false, List.of(), "");
    }

    @Override
    public boolean recognizes(String fileName) {
      return false;
    }

    @Override
    public List<SpecProblem> check(SpecFields spec) {
      return List.of();
    }

    @Override
    public Loaded load(ModelSpec spec, List<Integer> gpuIndices) {
      throw new UnsupportedOperationException();
    }
  }

  @Test
  void aPoolServesThroughAnEngineOnTheClassPath() throws Exception {
    Path jar = EchoEngineJar.build(dir, PROVIDER);
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
        .filter(a -> !a.startsWith("-javaagent") && !a.startsWith("-agentlib")).forEach(command::add);
    command.addAll(List.of("-cp", EchoEngineJar.testClassPath() + java.io.File.pathSeparator + jar,
        EchoEngineServe.class.getName(), dir.resolve("model").toString()));
    Path log = dir.resolve("serve.log");
    Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    try {
      assertThat(p.waitFor(2, TimeUnit.MINUTES)).as("the serving JVM ends").isTrue();
    } finally {
      p.destroyForcibly();
    }
    String out = Files.readString(log);
    List<String> results = out.lines().filter(l -> l.startsWith("RESULT ")).map(l -> l.substring(7)).toList();

    assertThat(p.exitValue()).as(out).isZero();
    assertThat(results).containsExactly(
        "engines=[PyTorch, OnnxRuntime, Python, Builtin, Echo]",
        "detected=Echo",
        "refused=outputs: an Echo model doubles each input: declare one output per input",
        "output=y[3.0, -4.0]");
  }
}
