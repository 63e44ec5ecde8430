package io.kiln.pipelines.jobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.Problem;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JobLoaderTest {

  @TempDir
  Path tmp;

  List<Problem> problems(String yaml) throws Exception {
    Path f = tmp.resolve("job.yaml");
    Files.writeString(f, yaml);
    try {
      new JobLoader().load(f);
    } catch (DeploymentValidationException e) {
      return e.problems();
    }
    throw new AssertionError("expected problems");
  }

  @Test
  void aValidFileGivesTheSpecWithPathsResolvedAgainstItsFolder() throws Exception {
    Path media = Files.createDirectories(tmp.resolve("media"));
    Files.write(media.resolve("b.f32"), new byte[16]);
    Files.write(media.resolve("a.f32"), new byte[16]);
    Files.writeString(tmp.resolve("uris.txt"), "# two inputs\nhttps://h/x.f32\n\nfile:///data/y.f32\nhttps://h/x.f32\n");
    Path f = tmp.resolve("job.yaml");
    Files.writeString(f, """
        name: clips
        deployment: mlp
        inputs: {folder: media}
        output: out/clips
        priority: normal
        per_node: 2
        """);
    JobSpec spec = new JobLoader().load(f);
    assertThat(spec.inputs()).containsExactly(media.resolve("a.f32").toUri().toString(),
        media.resolve("b.f32").toUri().toString());
    assertThat(spec.output()).isEqualTo(tmp.resolve("out/clips").toString());
    assertThat(spec.priority()).isEqualTo(JobSpec.Priority.NORMAL);
    assertThat(spec.perNode()).isEqualTo(2);
    assertThat(spec.maxInFlight()).isEqualTo(JobSpec.DEFAULT_MAX_IN_FLIGHT);
    Files.writeString(f, "name: m\ndeployment: mlp\ninputs: {manifest: uris.txt}\noutput: out\n");
    assertThat(new JobLoader().load(f).inputs()).as("distinct, in order").containsExactly("https://h/x.f32",
        "file:///data/y.f32");
  }

  @Test
  void everyProblemIsReportedWithLineAndColumn() throws Exception {
    List<Problem> p = problems("""
        name: Clips
        deployment: mlp
        pipeline: media
        inputs:
          uris: [https://h/a, "ftp://h/b"]
          folder: media
        ouput: out
        max_in_flight: 0
        priority: urgent
        """);
    assertThat(p).extracting(Problem::line, Problem::column, Problem::path).contains(
        org.assertj.core.groups.Tuple.tuple(1, 7, "name"),
        org.assertj.core.groups.Tuple.tuple(3, 11, "pipeline"),
        org.assertj.core.groups.Tuple.tuple(5, 3, "inputs"),
        org.assertj.core.groups.Tuple.tuple(7, 1, "ouput"),
        org.assertj.core.groups.Tuple.tuple(8, 16, "max_in_flight"),
        org.assertj.core.groups.Tuple.tuple(9, 11, "priority"));
    assertThat(p.stream().map(Problem::message).toList()).anyMatch(m -> m.contains("did you mean 'output'"))
        .anyMatch(m -> m.contains("either a deployment or a pipeline"))
        .anyMatch(m -> m.contains("exactly one of folder, uris and manifest"))
        .anyMatch(m -> m.contains("output"));
  }

  @Test
  void badInputsAreNamed() throws Exception {
    assertThat(problems("name: j\ndeployment: d\noutput: o\ninputs:\n  uris: [https://ok, 'ftp://no']\n"))
        .singleElement().satisfies(x -> {
          assertThat(x.line()).isEqualTo(5);
          assertThat(x.path()).isEqualTo("inputs.uris[1]");
          assertThat(x.message()).contains("ftp://no");
        });
    assertThat(problems("name: j\ndeployment: d\noutput: o\ninputs: {folder: nowhere}\n")).singleElement()
        .satisfies(x -> assertThat(x.message()).contains("no such folder"));
    assertThat(problems("name: j\ndeployment: d\ninputs: {uris: [https://a]}\n")).singleElement()
        .satisfies(x -> assertThat(x.message()).contains("output"));
    assertThatThrownBy(() -> new JobLoader().load("", tmp.resolve("e.yaml")))
        .isInstanceOf(DeploymentValidationException.class).hasMessageContaining("empty");
    assertThatThrownBy(() -> new JobLoader().load("name: [", tmp.resolve("e.yaml")))
        .isInstanceOf(DeploymentValidationException.class).hasMessageContaining("line 1");
  }
}
