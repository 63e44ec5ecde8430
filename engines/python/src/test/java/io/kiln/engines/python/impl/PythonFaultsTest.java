package io.kiln.engines.python.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelExecutionException;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.testsupport.PythonTests;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Python engine's faults at the runner, with real processes: a raising predict fails its batch only;
 * a process that exits, hangs past the request timeout or garbles the channel fails the runner; load
 * errors and datatypes numpy lacks are refused at load with clear messages.
 */
@Tag("slow")
class PythonFaultsTest {

  private static InferenceRequest row(float v) {
    return InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[] {v, v, v, v}));
  }

  private static PythonModelRunner faulty(Map<String, Object> config, Duration requestTimeout) {
    ModelSpec spec = PythonTests.faulty(config).build();
    spec = spec.toBuilder().python(spec.python().toBuilder().requestTimeout(requestTimeout).build()).build();
    return (PythonModelRunner) ModelRunners.load(spec, List.of());
  }

  @Test
  void aRaisingPredictFailsItsBatchWithPythonsMessageAndTheRunnerGoesOn() {
    try (PythonModelRunner r = faulty(Map.of(), Duration.ofSeconds(30))) {
      assertThatThrownBy(() -> r.infer(List.of(row(1), row(13))))
          .isInstanceOfSatisfying(InferenceException.class, e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.INTERNAL))
          .hasMessageContaining("model " + PythonTests.testModel("faulty"))
          .hasMessageContaining("predict raised ValueError: unlucky 13 in a batch of 2 rows")
          .hasMessageContaining("Traceback").hasMessageContaining("model.py\", line");
      assertThat(r.infer(List.of(row(1))).get(0).get(0).asFloats()).containsExactly(2, 2, 2, 2);
    }
  }

  @Test
  void aProcessThatExitsMidBatchFailsTheRunnerWithItsExitCodeAndLastWords() {
    try (PythonModelRunner r = faulty(Map.of(), Duration.ofSeconds(30))) {
      assertThatThrownBy(() -> r.infer(List.of(row(66))))
          .isInstanceOf(ModelExecutionException.class)
          .hasMessageContaining("exit code 3").hasMessageContaining("about to exit with code 3");
      assertThatThrownBy(() -> r.infer(List.of(row(1)))).as("dead for good").isInstanceOf(ModelExecutionException.class)
          .hasMessageContaining("exit code 3");
    }
  }

  @Test
  void aProcessKilledFromOutsideFailsTheNextBatch() {
    try (PythonModelRunner r = faulty(Map.of(), Duration.ofSeconds(30))) {
      ProcessHandle p = ProcessHandle.of(r.pid()).orElseThrow();
      p.destroyForcibly();
      await().atMost(Duration.ofSeconds(10)).until(() -> !p.isAlive());
      assertThatThrownBy(() -> r.infer(List.of(row(1)))).isInstanceOf(ModelExecutionException.class)
          .hasMessageContaining("killed by signal 9 (SIGKILL");
    }
  }

  @Test
  void aHangingPredictIsKilledAtTheRequestTimeout() {
    try (PythonModelRunner r = faulty(Map.of(), Duration.ofMillis(500))) {
      ProcessHandle p = ProcessHandle.of(r.pid()).orElseThrow();
      long start = System.nanoTime();
      assertThatThrownBy(() -> r.infer(List.of(row(77)))).isInstanceOf(ModelExecutionException.class)
          .hasMessageContaining("killed by Kiln").hasMessageContaining("did not answer 'predict' within 500 ms, so it was killed");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isBetween(Duration.ofMillis(450), Duration.ofSeconds(10));
      assertThat(p.isAlive()).isFalse();
    }
  }

  @Test
  void garbageOnTheFrameChannelIsAClearFailure() {
    try (PythonModelRunner r = faulty(Map.of(), Duration.ofSeconds(30))) {
      assertThatThrownBy(() -> r.infer(List.of(row(99)))).isInstanceOf(ModelExecutionException.class)
          .hasMessageContaining("sent a reply that is not a frame: a frame must start with KILN, got 'this is '");
    }
  }

  @Test
  void anInterpreterThatAnswersGarbageFailsTheLoad(@TempDir Path dir) throws Exception {
    Path fake = dir.resolve("fake-python");
    // The module check (python -B -c SCRIPT) gets an interpreter that fails, which skips the check (PythonModules),
    // so that the load reaches the channel; the worker gets garbage and a process that stays up until Kiln kills it.
    // exec: the kill reaches the process that holds the pipes (a sleep forked by sh kept stderr open, and the check's
    // stdout, for its whole 60 s: 70 s a run).
    Files.writeString(fake, "#!/bin/sh\n[ \"$2\" = -c ] && exit 1\necho 'Python 2.7 says hello'\nexec sleep 60\n");
    Files.setPosixFilePermissions(fake, PosixFilePermissions.fromString("rwx------"));
    ModelSpec spec = PythonTests.faulty(Map.of()).build();
    ModelSpec withFake = spec.toBuilder().python(spec.python().toBuilder().interpreter(fake.toString()).build()).build();
    assertThatThrownBy(() -> ModelRunners.load(withFake, List.of())).isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("did not load").hasMessageContaining("a frame must start with KILN, got 'Python 2'");
  }

  @Test
  void anInterpreterThatPrintsAndHangsLeavesTheModuleCheckWithinItsTimeout(@TempDir Path dir) throws Exception {
    Path hanging = dir.resolve("hanging-python");
    // Its answer is printed at once, then it never exits (a forked child could hold the output the same way).
    Files.writeString(hanging, "#!/bin/sh\necho '{\"executable\": \"x\", \"version\": \"3\", \"missing\": []}'\n"
        + "exec sleep 60\n");
    Files.setPosixFilePermissions(hanging, PosixFilePermissions.fromString("rwx------"));
    long start = System.nanoTime();
    PythonModules.Result r = PythonModules.check(hanging.toString(), Map.of(), List.of("numpy"), Duration.ofSeconds(1));
    // No answer (the check is skipped, never fatal), and not the 60 s the pipe stayed open for.
    assertThat(r).isNull();
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(20));
  }

  @Test
  void anInterpreterWithoutNumpyFailsTheLoadSayingSo(@TempDir Path dir) throws Exception {
    Path bare = dir.resolve("python-without-site-packages");
    Files.writeString(bare, "#!/bin/sh\nexec " + PythonTests.interpreter() + " -S \"$@\"\n");
    Files.setPosixFilePermissions(bare, PosixFilePermissions.fromString("rwx------"));
    ModelSpec spec = PythonTests.faulty(Map.of()).build();
    ModelSpec withBare = spec.toBuilder().python(spec.python().toBuilder().interpreter(bare.toString()).build()).build();
    // Checked before the worker starts (PythonModules): the interpreter, the module, and who has it.
    assertThatThrownBy(() -> ModelRunners.load(withBare, List.of())).isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("the Python interpreter '" + bare + "'")
        .hasMessageContaining("has no module numpy, which Kiln's worker needs")
        .hasMessageContaining(PythonTests.interpreter() + " (Python ")
        .hasMessageContaining(": set the model's python.interpreter to ");
  }

  @Test
  void theScriptRefusesAFrameThatDoesNotParseWithAFatalErrorFrame() throws Exception {
    Process p = new ProcessBuilder(PythonTests.interpreter(), PythonProcess.script().toString()).start();
    try (OutputStream in = p.getOutputStream(); InputStream out = p.getInputStream()) {
      in.write("KILN\u0005\0\0\0{oops".getBytes(StandardCharsets.ISO_8859_1));
      in.flush();
      PythonFrames.Frame reply = PythonFrames.read(out);
      assertThat(reply.op()).isEqualTo("error");
      assertThat(reply.header().path("fatal").asBoolean()).isTrue();
      assertThat(PythonFrames.describeError(reply.header())).startsWith("FrameError: frame header is not UTF-8 JSON");
      assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).isEqualTo(2);
    } finally {
      p.destroyForcibly();
    }
  }

  @Test
  void datatypesNumpyLacksAreRefusedAtLoadBeforeAnyProcessStarts() {
    ModelSpec spec = ModelSpec.builder().uri(PythonTests.testModel("faulty")).engine(ModelSpec.ENGINE_PYTHON)
        .input("x", DataType.BF16, -1, 4).output("y", DataType.FP32, -1, 4).build();
    assertThatThrownBy(() -> ModelRunners.load(spec, List.of())).isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("tensor 'x' is BF16, which the Python engine does not support");
  }

  @Test
  void loadErrorsSayWhatPythonSaid() {
    ModelSpec spec = PythonTests.faulty(Map.of("expect", Map.of("device", "cuda:7"))).build();
    assertThatThrownBy(() -> ModelRunners.load(spec, List.of())).isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("RuntimeError: expected device='cuda:7', got 'cpu'");
    ModelSpec noClass = spec.toBuilder().python(spec.python().toBuilder().className("Missing").build()).build();
    assertThatThrownBy(() -> ModelRunners.load(noClass, List.of())).isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("defines no class 'Missing'");
    ModelSpec noFolder = spec.toBuilder().uri(PythonTests.testModel("faulty").resolve("nowhere")).build();
    assertThatThrownBy(() -> ModelRunners.load(noFolder, List.of())).isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("no model.py in");
    ModelSpec noPython = spec.toBuilder().python(spec.python().toBuilder().interpreter("/nonexistent/venv").build()).build();
    assertThatThrownBy(() -> ModelRunners.load(noPython, List.of())).isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("python.interpreter: /nonexistent/venv is not an executable file");
  }

  @Test
  void aRunnerUsedAfterItsProcessFailedFailsAtOnce() {
    ModelRunner r = faulty(Map.of(), Duration.ofSeconds(30));
    assertThatThrownBy(() -> r.infer(List.of(row(66)))).isInstanceOf(ModelExecutionException.class);
    r.close(); // closing a runner whose process is gone is quiet
    assertThatThrownBy(() -> r.infer(List.of(row(1)))).isInstanceOf(IllegalStateException.class);
  }
}
