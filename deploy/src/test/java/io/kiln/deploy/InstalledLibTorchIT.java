package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.testkit.KilnProcess;
import java.io.IOException;
import java.io.InputStream;
import java.net.JarURLConnection;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * "Bring your own libtorch" ({@code --libtorch}) in a real {@code kiln up} process: the bundled libtorch unpacked into a
 * folder laid out as a libtorch archive is ({@code libtorch/lib/*.so}, {@code libtorch/build-version}) stands in for
 * an installed one. The node must load the PyTorch engine from that folder (its {@code /proc/PID/maps} shows
 * {@code libtorch_cpu.so} mapped from there, not from DJL's cache of the bundled jar) and serve torch's numbers;
 * a libtorch version without a matching JNI library stops the command with the reason before anything starts.
 */
class InstalledLibTorchIT {

  static final Duration START = Duration.ofSeconds(180);
  static CliProcesses cli;
  static Path libtorch;
  static String torch;

  @BeforeAll
  static void unpackLibtorch() throws Exception {
    cli = new CliProcesses(Path.of("target", "kiln-it", "libtorch-" + UUID.randomUUID().toString().substring(0, 8)));
    Path root = Files.createDirectories(cli.home().resolve("libtorch"));
    libtorch = Files.createDirectories(root.resolve("lib"));
    URL props = InstalledLibTorchIT.class.getClassLoader().getResource("native/lib/pytorch.properties");
    assertThat(props).as("pytorch-native-cpu on the test class path").isNotNull();
    try (JarFile jar = ((JarURLConnection) props.openConnection()).getJarFile()) {
      for (JarEntry e : jar.stream().toList()) {
        String name = e.getName();
        if (!e.isDirectory() && name.startsWith("pytorch/cpu/linux-x86_64/")) {
          try (InputStream in = jar.getInputStream(e)) {
            Files.copy(in, libtorch.resolve(name.substring(name.lastIndexOf('/') + 1)),
                StandardCopyOption.REPLACE_EXISTING);
          }
        }
      }
    }
    Properties shipped = new Properties();
    try (InputStream in = props.openStream()) {
      shipped.load(in);
    }
    torch = shipped.getProperty("version").split("-")[0]; // version=2.7.1-20250812
    Files.writeString(root.resolve("build-version"), torch + "+cpu\n");
  }

  @AfterAll
  static void stop() throws Exception {
    if (cli != null) {
      cli.close();
    }
    if (libtorch != null) {
      try (var files = Files.list(libtorch)) {
        for (Path f : files.toList()) {
          Files.delete(f); // half a gigabyte per run
        }
      }
    }
  }

  @Test
  void aNodeOnAnInstalledLibtorchLoadsItFromThereAndServesTorchsNumbers() throws Exception {
    Path quickstart = KilnCliTest.repositoryRoot().resolve("deploy/examples/quickstart.yaml");
    KilnProcess up = cli.startNode("up", "up", "--file", quickstart.toString(), "--libtorch", libtorch.toString(),
        "--node-id", "byo", "--host", "127.0.0.1", "--port", "0", "--grpc-port", "0", "--gpus", "0", "--cpus", "2",
        "--warmup-seconds", "0");
    up.awaitLog("is ready", START);
    assertThat(cli.output("up")).contains("kiln: PyTorch engine on libtorch " + torch + " (cpu) from " + libtorch.toRealPath());
    // The node's record in .kiln/nodes is written just after the ready line is printed.
    int port = cli.awaitEntry("byo", up, Duration.ofSeconds(30), false).path("httpPort").asInt();
    KilnCliIT.inferQuickstart(port, "byo");

    List<String> torchLibs = new ArrayList<>();
    for (String line : Files.readAllLines(Path.of("/proc/" + up.pid() + "/maps"))) {
      if (line.contains("libtorch_cpu.so")) {
        torchLibs.add(line.substring(line.indexOf('/')));
      }
    }
    assertThat(torchLibs).as("where libtorch_cpu.so is mapped from").isNotEmpty()
        .allSatisfy(p -> assertThat(p).isEqualTo(libtorch.toRealPath().resolve("libtorch_cpu.so").toString()));
  }

  @Test
  void aLibtorchWithoutAMatchingJniStopsTheCommandWithTheReason() throws Exception {
    Path quickstart = KilnCliTest.repositoryRoot().resolve("deploy/examples/quickstart.yaml");
    CliProcesses.Result r = cli.run(Duration.ofSeconds(60), "up", "--file", quickstart.toString(), "--libtorch",
        libtorch.toString(),
        "--libtorch-version", "2.11.0", "--libtorch-flavor", "cu130", "--port", "0", "--grpc-port", "0", "--gpus", "0");
    assertThat(r.code()).as(r.output()).isNotZero();
    assertThat(r.output()).contains("--libtorch: libtorch 2.11.0 (cu130)").contains("has no matching JNI library")
        .contains("for PyTorch " + torch + " only").doesNotContain("node byo up");
  }

  @Test
  void libtorchFlagsWithoutTheFolderAreRefused() throws Exception {
    CliProcesses.Result r = cli.run(Duration.ofSeconds(60), "start", "--head", "--libtorch-version", "2.7.1",
        "--port", "0", "--grpc-port", "0", "--gpus", "0");
    assertThat(r.code()).as(r.output()).isNotZero();
    assertThat(r.output()).contains("--libtorch-version and --libtorch-flavor need --libtorch");
  }
}
