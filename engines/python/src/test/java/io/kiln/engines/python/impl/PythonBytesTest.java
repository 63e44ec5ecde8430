package io.kiln.engines.python.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.spi.ByteElements;
import io.kiln.pools.testsupport.PythonTests;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** BYTES through a real Python process: deploy/examples/text's Upper, one request and batches of uneven strings. */
@Tag("slow")
class PythonBytesTest {

  private static ModelRunner upper;

  @BeforeAll
  static void load() {
    upper = ModelRunners.load(ModelSpec.builder().uri(PythonTests.repositoryRoot().resolve("deploy/examples/text"))
        .engine(ModelSpec.ENGINE_PYTHON).python(PythonTests.options().className("Upper").build())
        .input("text", DataType.BYTES, -1).output("upper", DataType.BYTES, -1).output("length", DataType.INT32, -1)
        .warmupBatchSizes(1, 4).intraOpThreads(1).build(), List.of());
  }

  @AfterAll
  static void close() {
    upper.close();
  }

  static Tensor text(String name, String... s) {
    return new Tensor(name, DataType.BYTES, new long[] {s.length}, ByteElements.joinStrings(s));
  }

  static int[] ints(Tensor t) {
    int[] out = new int[t.data().length / 4];
    ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().get(out);
    return out;
  }

  @Test
  void stringsGoInAsBytesAndComeBackUpperCasedWithTheirLengths() {
    List<Tensor> out = upper.infer(List.of(InferenceRequest.of(text("text", "hello", "", "Wörld \u4e2d")))).get(0);
    assertThat(out).hasSize(2);
    assertThat(out.get(0).name()).isEqualTo("upper");
    assertThat(out.get(0).datatype()).isEqualTo(DataType.BYTES);
    assertThat(out.get(0).shape()).containsExactly(3);
    assertThat(ByteElements.strings(out.get(0))).containsExactly("HELLO", "", "WÖRLD \u4e2d");
    assertThat(out.get(1).datatype()).isEqualTo(DataType.INT32);
    assertThat(ints(out.get(1))).containsExactly(5, 0, 7);
  }

  @Test
  void aBatchOfUnevenStringsGivesEachRequestItsOwnRows() {
    List<InferenceRequest> batch = new ArrayList<>();
    List<String[]> sent = new ArrayList<>();
    for (int r = 0; r < 6; r++) {
      String[] rows = new String[1 + r % 3];
      for (int i = 0; i < rows.length; i++) {
        rows[i] = "r" + r + "x".repeat(r * 37 + i * 11);
      }
      sent.add(rows);
      batch.add(new InferenceRequest("req" + r, List.of(text("text", rows)), List.of(), Map.of()));
    }
    List<List<Tensor>> out = upper.infer(batch);
    assertThat(out).hasSize(batch.size());
    for (int r = 0; r < batch.size(); r++) {
      String[] want = Arrays.stream(sent.get(r)).map(s -> s.toUpperCase()).toArray(String[]::new);
      assertThat(out.get(r).get(0).shape()).containsExactly(want.length);
      assertThat(ByteElements.strings(out.get(r).get(0))).as("request %d", r).containsExactly(want);
      assertThat(ints(out.get(r).get(1))).containsExactly(Arrays.stream(want).mapToInt(String::length).toArray());
    }
  }

  @Test
  void bytesThatAreNotUtf8CrossUnchanged() {
    ModelSpec echo = ModelSpec.builder().uri(PythonTests.testModel("faulty")).engine(ModelSpec.ENGINE_PYTHON)
        .python(PythonTests.options().className("Echo").build())
        .input("b", DataType.BYTES, -1, 2).output("b_out", DataType.BYTES, -1, 2).warmupBatchSizes(List.of(1)).build();
    byte[] data = ByteElements.join(List.of(new byte[] {(byte) 0xff, 0, 1}, new byte[0], "ok".getBytes(StandardCharsets.UTF_8),
        new byte[] {(byte) 0x80}));
    Tensor in = new Tensor("b", DataType.BYTES, new long[] {2, 2}, data);
    try (ModelRunner runner = ModelRunners.load(echo, List.of())) {
      Tensor out = runner.infer(List.of(InferenceRequest.of(in))).get(0).get(0);
      assertThat(out).isEqualTo(in.withName("b_out"));
    }
  }

  @Test
  void anOutputOfNeitherBytesNorStrFailsItsBatchAndTheProcessGoesOn() {
    ModelSpec bad = ModelSpec.builder().uri(PythonTests.testModel("faulty")).engine(ModelSpec.ENGINE_PYTHON)
        .python(PythonTests.options().className("BadText").build())
        .input("t", DataType.BYTES, -1).output("out", DataType.BYTES, -1).warmupBatchSizes(List.of(1)).build();
    try (ModelRunner runner = ModelRunners.load(bad, List.of())) {
      assertThatThrownBy(() -> runner.infer(List.of(InferenceRequest.of(text("t", "ints")))))
          .isInstanceOf(InferenceException.class)
          .hasMessageContaining("output 'out' is BYTES: its elements must be bytes or str, got int");
      assertThatThrownBy(() -> runner.infer(List.of(InferenceRequest.of(text("t", "floats")))))
          .isInstanceOf(InferenceException.class)
          .hasMessageContaining("output 'out' is BYTES: return a numpy array of dtype object (bytes or str), S or U");
      assertThat(ByteElements.strings(runner.infer(List.of(InferenceRequest.of(text("t", "fine")))).get(0).get(0)))
          .containsExactly("fine");
    }
  }

  @Test
  void theJvmRefusesABytesTensorWhosePrefixesDoNotFitItsFrame() throws Exception {
    ByteArrayOutputStream frame = new ByteArrayOutputStream();
    ObjectNode header = PythonFrames.header("result", 1);
    PythonFrames.write(frame, header, List.of(new Tensor("out", DataType.BYTES, new long[] {1}, new byte[] {9, 0, 0, 0, 'x'})));
    assertThatThrownBy(() -> PythonFrames.read(new ByteArrayInputStream(frame.toByteArray())))
        .isInstanceOf(PythonFrames.BadFrameException.class)
        .hasMessage("tensor 'out': BYTES element 0 claims 9 bytes but only 1 remain");

    ByteArrayOutputStream good = new ByteArrayOutputStream();
    Tensor t = text("out", "a", "");
    PythonFrames.write(good, PythonFrames.header("result", 2), List.of(t));
    assertThat(PythonFrames.read(new ByteArrayInputStream(good.toByteArray())).tensors()).containsExactly(t);
  }

  @Test
  void theScriptRefusesABytesTensorWithAnOverrunningPrefixAsAFatalFrameError() throws Exception {
    Process p = new ProcessBuilder(PythonTests.interpreter(), PythonProcess.script().toString()).start();
    try (OutputStream in = p.getOutputStream(); InputStream out = p.getInputStream()) {
      PythonFrames.write(in, PythonFrames.header("predict", 3),
          List.of(new Tensor("t", DataType.BYTES, new long[] {2}, new byte[] {1, 0, 0, 0, 'a', 7, 0, 0, 0, 'b'})));
      PythonFrames.Frame reply = PythonFrames.read(out);
      assertThat(reply.op()).isEqualTo("error");
      assertThat(reply.header().path("fatal").asBoolean()).isTrue();
      assertThat(PythonFrames.describeError(reply.header()))
          .startsWith("FrameError: tensor 't': BYTES element 1 claims 7 bytes, 1 remain");
      assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).isEqualTo(2);
    } finally {
      p.destroyForcibly();
    }
  }
}
