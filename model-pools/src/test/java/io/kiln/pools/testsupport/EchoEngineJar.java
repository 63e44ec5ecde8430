package io.kiln.pools.testsupport;

import io.kiln.pools.spi.Engine;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

/**
 * A third-party engine as its author ships it: {@code com.example.echo.EchoEngine} (engine {@value #NAME}, models
 * that return each input times two, a folder holding {@value #MODEL_FILE}) compiled from source against
 * model-pools and packed into a jar with its {@code META-INF/services} file. Nothing of it is on the test class
 * path: only the jar holds it. The example of docs/engines.md: {@code ThirdPartyEngineTest} (kiln-engine-python's
 * tests) serves through it in a pool, deploy's {@code ThirdPartyEngineNodeTest} on a {@code kiln up} node.
 */
public final class EchoEngineJar {

  public static final String NAME = "Echo";
  public static final String MODEL_FILE = "model.echo";

  private static final String ENGINE = """
      package com.example.echo;

      import io.kiln.pools.ModelSpec;
      import io.kiln.pools.spi.Engine;
      import io.kiln.pools.spi.SpecFields;
      import io.kiln.pools.spi.SpecProblem;
      import java.util.List;
      import java.util.OptionalLong;

      public final class EchoEngine implements Engine {
        private static final Capabilities CAPABILITIES =
            new Capabilities(true, "", false, false, List.of(), "model.echo");

        public String name() { return "%s"; }
        public Capabilities capabilities() { return CAPABILITIES; }
        public boolean recognizes(String fileName) { return fileName.equals("model.echo"); }

        public List<SpecProblem> check(SpecFields spec) {
          return spec.outputs().size() == spec.inputs().size() ? List.of()
              : List.of(new SpecProblem("outputs", "an Echo model doubles each input: declare one output per input"));
        }

        public Loaded load(ModelSpec spec, List<Integer> gpuIndices) {
          return new Loaded(new EchoRunner(spec), "cpu()", "1.0", "echo", OptionalLong.of(0));
        }
      }
      """.formatted(NAME);

  private static final String RUNNER = """
      package com.example.echo;

      import io.kiln.pools.InferenceRequest;
      import io.kiln.pools.ModelLoadInfo;
      import io.kiln.pools.ModelRunner;
      import io.kiln.pools.ModelSpec;
      import io.kiln.pools.Tensor;
      import java.util.ArrayList;
      import java.util.List;
      import java.util.OptionalLong;

      final class EchoRunner implements ModelRunner {
        private final ModelSpec spec;

        EchoRunner(ModelSpec spec) { this.spec = spec; }

        public ModelSpec spec() { return spec; }
        public ModelLoadInfo loadInfo() { throw new UnsupportedOperationException("Kiln records it"); }
        public OptionalLong memoryBytes() { return OptionalLong.of(0); }
        public void close() { }

        public List<List<Tensor>> infer(List<InferenceRequest> batch) {
          List<List<Tensor>> out = new ArrayList<>();
          for (InferenceRequest r : batch) {
            List<Tensor> answer = new ArrayList<>();
            for (int i = 0; i < spec.inputs().size(); i++) {
              String name = spec.inputs().get(i).name();
              Tensor in = r.inputs().stream().filter(t -> t.name().equals(name)).findFirst().orElseThrow();
              float[] v = in.asFloats();
              for (int k = 0; k < v.length; k++) {
                v[k] *= 2;
              }
              answer.add(Tensor.ofFloats(spec.outputs().get(i).name(), in.shape(), v));
            }
            out.add(answer);
          }
          return out;
        }
      }
      """;

  private EchoEngineJar() {
  }

  /** The class path this test runs with (surefire's, when the JVM's own is its booter jar). */
  public static String testClassPath() {
    return System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
  }

  /**
   * Compiles the engine into {@code dir} and packs it as {@code dir/echo-engine.jar}.
   *
   * @param serviceLines the lines of its {@code META-INF/services/io.kiln.pools.spi.Engine}
   */
  public static Path build(Path dir, String... serviceLines) throws IOException {
    Path src = Files.createDirectories(dir.resolve("src/com/example/echo"));
    Path classes = Files.createDirectories(dir.resolve("classes"));
    Files.writeString(src.resolve("EchoEngine.java"), ENGINE);
    Files.writeString(src.resolve("EchoRunner.java"), RUNNER);
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    int rc = javac.run(null, null, null, "-classpath", testClassPath(), "-d", classes.toString(),
        src.resolve("EchoEngine.java").toString(), src.resolve("EchoRunner.java").toString());
    if (rc != 0) {
      throw new IllegalStateException("javac failed: " + rc);
    }
    Path jar = dir.resolve("echo-engine.jar");
    List<Path> files = new ArrayList<>();
    try (Stream<Path> walk = Files.walk(classes)) {
      walk.filter(Files::isRegularFile).forEach(files::add);
    }
    try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar))) {
      for (Path f : files) {
        out.putNextEntry(new JarEntry(classes.relativize(f).toString().replace('\\', '/')));
        Files.copy(f, out);
        out.closeEntry();
      }
      out.putNextEntry(new JarEntry("META-INF/services/" + Engine.class.getName()));
      write(out, String.join("\n", serviceLines) + "\n");
      out.closeEntry();
    }
    return jar;
  }

  /** A jar holding only a services file naming {@code providers} (classes found through the parent loader). */
  public static Path servicesOnly(Path dir, String... providers) throws IOException {
    Path jar = Files.createDirectories(dir).resolve("services-only.jar");
    try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar))) {
      out.putNextEntry(new JarEntry("META-INF/services/" + Engine.class.getName()));
      write(out, String.join("\n", providers) + "\n");
      out.closeEntry();
    }
    return jar;
  }

  private static void write(OutputStream out, String text) throws IOException {
    out.write(text.getBytes(StandardCharsets.UTF_8));
  }
}
