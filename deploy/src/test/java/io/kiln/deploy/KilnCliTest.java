package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The {@code kiln} command's argument handling and error messages, in process and without a cluster: every
 * case here fails before a node would start (or, for the unreachable join, right after its membership
 * finds no one), with one line on stderr and exit code 1 (2 for usage errors).
 */
@Tag("slow")
class KilnCliTest {

  /** What one command printed and returned. */
  record Run(int code, String out, String err) {

    List<String> errLines() {
      return err.lines().toList();
    }
  }

  static Run kiln(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = KilnCli.run(new PrintWriter(out), new PrintWriter(err), args);
    return new Run(code, out.toString(), err.toString());
  }

  static Path repositoryRoot() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isDirectory(p.resolve("models").resolve("mlp"))) {
        return p;
      }
    }
    throw new IllegalStateException("no models/mlp above " + Path.of("").toAbsolutePath());
  }

  /** A loopback port nothing listens on (it was free a moment ago). */
  static int closedPort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  @Test
  void withoutACommandItPrintsUsage() {
    Run r = kiln();
    assertThat(r.code()).isZero();
    assertThat(r.out()).contains("Usage: kiln").contains("up").contains("start").contains("deploy").contains("stop");
  }

  @Test
  void badResourcesJsonIsOneLine() {
    Run notJson = kiln("start", "--head", "--foreground", "--resources", "{step_a_slot: 4");
    assertThat(notJson.code()).isEqualTo(1);
    assertThat(notJson.errLines()).singleElement().asString()
        .startsWith("kiln: --resources must be a JSON object of numbers, e.g. '{\"step_a_slot\":4}'")
        .contains("is not JSON");
    assertThat(notJson.out()).isEmpty();

    Run notAnObject = kiln("start", "--head", "--foreground", "--resources", "[4]");
    assertThat(notAnObject.code()).isEqualTo(1);
    assertThat(notAnObject.errLines()).singleElement().asString().endsWith("got [4]");

    Run notANumber = kiln("start", "--head", "--foreground", "--resources", "{\"step_a_slot\": \"four\"}");
    assertThat(notANumber.code()).isEqualTo(1);
    assertThat(notANumber.errLines()).singleElement().asString().endsWith("'step_a_slot' is \"four\"");

    Run negative = kiln("start", "--head", "--foreground", "--resources", "{\"step_a_slot\": -1}");
    assertThat(negative.code()).isEqualTo(1);
    assertThat(negative.errLines()).singleElement().asString().startsWith("kiln: ").contains("step_a_slot");
  }

  @Test
  void headAndAddressAreExclusiveAndOneIsRequired() {
    Run both = kiln("start", "--head", "--address", "127.0.0.1:5701");
    assertThat(both.code()).isEqualTo(2);
    assertThat(both.errLines()).singleElement().asString()
        .startsWith("kiln start: ").contains("mutually exclusive").endsWith("(see 'kiln start --help')");

    Run neither = kiln("start", "--port", "9000");
    assertThat(neither.code()).isEqualTo(2);
    assertThat(neither.errLines()).singleElement().asString()
        .startsWith("kiln start: Missing required argument").contains("--head").contains("--address");
  }

  @Test
  void otherBadOptionsAreOneLine() {
    assertThat(kiln("start", "--head", "--gpus", "-1").errLines()).singleElement().asString()
        .isEqualTo("kiln: --gpus must be >= 0, got -1");
    assertThat(kiln("start", "--address", "no-port-here").errLines()).singleElement().asString()
        .isEqualTo("kiln: member address must be host:port, got 'no-port-here'");
    assertThat(kiln("start", "--head", "--node-id", "a/b").errLines()).singleElement().asString()
        .startsWith("kiln: nodeId must be");
    Run typo = kiln("status", "--jsn");
    assertThat(typo.code()).isEqualTo(2);
    assertThat(typo.errLines()).singleElement().asString().startsWith("kiln status: Unknown option: '--jsn'");
    assertThat(kiln("start", "--head", "--warmup-seconds", "-1").errLines()).singleElement().asString()
        .isEqualTo("kiln: --warmup-seconds must be >= 0 (0 = off), got -1.0");
    assertThat(kiln("start", "--head", "--warmup-seconds", "601").errLines()).singleElement().asString()
        .isEqualTo("kiln: --warmup-seconds / --warmup-requests: warm-up duration must be in 0..600 s, got 601000 ms");
    assertThat(kiln("start", "--head", "--warmup-requests", "0").errLines()).singleElement().asString()
        .isEqualTo("kiln: --warmup-seconds / --warmup-requests: warm-up requests must be at least 1, got 0");
    Run stop = kiln("stop", "--timeout", "0");
    assertThat(stop.code()).isEqualTo(1);
    assertThat(stop.errLines()).singleElement().asString().isEqualTo("kiln: --timeout must be at least 1 second, got 0");
  }

  @Test
  void anUnreachableManagementAddressIsOneLine() throws IOException {
    int port = closedPort();
    for (String[] args : List.of(new String[] {"status", "--address", "127.0.0.1:" + port},
        new String[] {"delete", "mlp", "--address", "http://127.0.0.1:" + port},
        new String[] {"deploy", repositoryRoot().resolve("deploy/examples/quickstart.yaml").toString(), "--address",
            "127.0.0.1:" + port})) {
      Run r = kiln(args);
      assertThat(r.code()).as(String.join(" ", args)).isEqualTo(1);
      assertThat(r.errLines()).singleElement().asString()
          .isEqualTo("kiln: no Kiln node answers at http://127.0.0.1:" + port
              + "/ (start one with ./kiln up or ./kiln start --head)");
    }
  }

  @Test
  void joiningThroughAnAddressWhereNobodyAnswersFailsInOneLine() throws IOException {
    int port = closedPort();
    String cluster = "cli-test-" + UUID.randomUUID();
    Run r = kiln("start", "--address", "127.0.0.1:" + port, "--foreground", "--node-id", "lonely", "--cluster-name",
        cluster, "--port", "0", "--grpc-port", "0", "--cluster-port", "0", "--cpus", "1", "--start-timeout", "60");
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.errLines()).singleElement().asString()
        .isEqualTo("kiln: could not start node lonely: could not join a cluster named '" + cluster + "' through "
            + "127.0.0.1:" + port + ": no member answered (is a node running there, is that its cluster port, and "
            + "do the cluster name and secret match?)");
    assertThat(r.out()).isEmpty();
  }

  @Test
  void anInvalidDeploymentFileListsEveryProblemWithLineAndColumn() {
    Path file = repositoryRoot().resolve("deploy/examples/invalid.yaml");
    Run r = kiln("deploy", file.toString(), "--address", "127.0.0.1:9");
    assertThat(r.code()).isEqualTo(1);
    List<String> lines = r.errLines();
    assertThat(lines.get(0)).isEqualTo(file + " is invalid; nothing was applied:");
    assertThat(lines.subList(1, lines.size())).hasSizeGreaterThanOrEqualTo(8)
        .allSatisfy(l -> assertThat(l).matches("  " + java.util.regex.Pattern.quote(file.toString()) + ":\\d+:\\d+: .+"));
    assertThat(r.err())
        .contains(file + ":3:")
        .contains("deployments[0].name")
        .contains("FP23")
        .contains("workers_per_nod");
    assertThat(r.out()).isEmpty();
  }

  @Test
  void aMissingFileIsOneLine() {
    assertThat(kiln("deploy", "no/such/file.yaml").errLines()).singleElement().asString()
        .isEqualTo("kiln: no such file: no/such/file.yaml");
    assertThat(kiln("up", "--file", "no/such/file.yaml").errLines()).singleElement().asString()
        .startsWith("kiln: no such deployment file: ").endsWith("no/such/file.yaml");
  }
}
