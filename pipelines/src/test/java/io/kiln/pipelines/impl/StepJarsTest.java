package io.kiln.pipelines.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pipelines.Step;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("slow")
class StepJarsTest {

  @TempDir
  Path tmp;

  @Test
  void withoutJarsTheApplicationsClassesServe() throws Exception {
    ClassLoader app = getClass().getClassLoader();
    assertThat(StepJars.loader(tmp.resolve("absent"), app)).isSameAs(app);
    assertThat(StepJars.loader(Files.createDirectories(tmp.resolve("empty")), app)).isSameAs(app);
  }

  @Test
  void aStepClassOnlyInAJarOfTheFolderLoadsAndRuns() throws Exception {
    Path src = Files.createDirectories(tmp.resolve("src/com/example"));
    Files.writeString(src.resolve("Shout.java"), """
        package com.example;
        import java.util.Map;
        public final class Shout implements io.kiln.pipelines.Step {
          @Override
          public Map<String, Object> run(io.kiln.pipelines.StepContext ctx) {
            return Map.of("said", ctx.params().get("word").toUpperCase());
          }
        }
        """);
    Path classes = Files.createDirectories(tmp.resolve("classes"));
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    String cp = Path.of(Step.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    int rc = javac.run(null, null, null, "-d", classes.toString(), "-cp", cp,
        src.resolve("Shout.java").toString());
    assertThat(rc).isZero();
    Path steps = Files.createDirectories(tmp.resolve("steps"));
    try (OutputStream out = Files.newOutputStream(steps.resolve("shout.jar"));
         JarOutputStream jar = new JarOutputStream(out)) {
      jar.putNextEntry(new JarEntry("com/example/Shout.class"));
      jar.write(Files.readAllBytes(classes.resolve("com/example/Shout.class")));
      jar.closeEntry();
    }
    ClassLoader app = getClass().getClassLoader();
    assertThat(StepClasses.on(app).problem("com.example.Shout")).contains("is not on the classpath");
    ClassLoader loader = StepJars.loader(steps, app);
    assertThat(StepClasses.on(loader).problem("com.example.Shout")).isNull();
    Step step = StepClasses.load(loader, "com.example.Shout").newInstance();
    Map<String, Object> out = step.run(new FixedContext(Map.of("word", "kiln")));
    assertThat(out).containsEntry("said", "KILN");
    assertThat(List.of(step.getClass().getClassLoader())).containsExactly(loader);
  }

  /** Just enough context for a step that reads its params. */
  private record FixedContext(Map<String, String> params) implements io.kiln.pipelines.StepContext {
    public String runId() {
      return "r";
    }

    public String pipeline() {
      return "p";
    }

    public String step() {
      return "s";
    }

    public int attempt() {
      return 1;
    }

    public String nodeId() {
      return "n";
    }

    public Map<String, String> input() {
      return Map.of();
    }

    public java.util.Optional<io.kiln.pipelines.StepResult> result(String step) {
      return java.util.Optional.empty();
    }

    public io.kiln.pipelines.NodeCache cache() {
      return null;
    }

    public io.kiln.runtime.KilnRuntime runtime() {
      return null;
    }

    public void progress(String message) {
    }
  }
}
