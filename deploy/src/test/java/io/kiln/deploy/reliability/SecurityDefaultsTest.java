package io.kiln.deploy.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.deploy.KilnCli;
import io.kiln.gateway.GatewayOptions;
import io.kiln.runtime.ClusterOptions;
import io.kiln.testkit.RunStamp;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Security properties checked on the built code: no Kiln class (any module) uses Java native
 * deserialization, XML bean decoding or Jackson default typing; and every listener's default bind address is
 * explicit (loopback), the cluster's never a wildcard.
 */
class SecurityDefaultsTest {

  static final List<String> MODULES = List.of("runtime", "model-pools", "serve", "gateway", "deploy");

  static Path repositoryRoot() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isDirectory(p.resolve("models").resolve("mlp"))) {
        return p;
      }
    }
    throw new IllegalStateException("no repository root above " + Path.of("").toAbsolutePath());
  }

  /** Where each module's compiled main classes are: its target/classes, or its jar on the classpath. */
  static Map<String, Path> moduleClasses() {
    Map<String, Path> out = new LinkedHashMap<>();
    Path root = repositoryRoot();
    for (String m : List.of("runtime", "model-pools", "serve", "gateway", "deploy", "loadtest")) {
      Path classes = root.resolve(m).resolve("target/classes");
      if (Files.isDirectory(classes.resolve("io/kiln"))) {
        out.put(m, classes);
      }
    }
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    for (String entry : cp.split(java.io.File.pathSeparator)) {
      String name = Path.of(entry).getFileName().toString();
      for (String m : MODULES) {
        if (name.startsWith("kiln-" + m + "-") && name.endsWith(".jar") && !name.contains("tests")) {
          out.putIfAbsent(m, Path.of(entry));
        }
      }
    }
    return out;
  }

  @Test
  void noKilnClassUsesJavaNativeSerialization() {
    Map<String, Path> modules = moduleClasses();
    assertThat(modules).as("compiled modules found").containsKeys(MODULES.toArray(String[]::new));
    List<String> violations = new ArrayList<>();
    int classes = 0;
    for (Map.Entry<String, Path> m : modules.entrySet()) {
      List<ClassScan.Refs> refs = ClassScan.scan(m.getValue());
      assertThat(refs).as(m.getKey() + " classes").isNotEmpty();
      classes += refs.size();
      refs.forEach(r -> violations.addAll(ClassScan.violations(r)));
    }
    Path out = Path.of(System.getProperty("kiln.reliability.out", "target/reliability"));
    String json = "{\"scenario\":\"serialization-scan\",\"modules\":" + modules.size() + ",\"classes\":" + classes
        + ",\"violations\":" + violations.size() + "," + RunStamp.jsonMembers() + "}";
    try {
      Files.createDirectories(out);
      Files.writeString(out.resolve("serialization-scan.json"), json);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    System.out.println("RELIABILITY serialization-scan " + json);
    assertThat(violations).as("scanned %d classes", classes).isEmpty();
    assertThat(classes).isGreaterThan(300);
  }

  @Test
  void theScanCatchesObjectInputStream() throws Exception {
    Path self = Path.of(SerializationCanary.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<String> found = ClassScan.scan(self).stream().filter(r -> r.className().endsWith("SerializationCanary"))
        .flatMap(r -> ClassScan.violations(r).stream()).toList();
    assertThat(found).anyMatch(v -> v.contains("java/io/ObjectInputStream"))
        .anyMatch(v -> v.contains("ObjectInputStream.readObject"));
  }

  @Test
  void defaultBindAddressesAreExplicitLoopback() {
    assertThat(GatewayOptions.defaults().host()).isEqualTo("127.0.0.1");
    for (String[] args : List.of(new String[] {"start", "--head"}, new String[] {"start", "--address", "10.0.0.1:5701"},
        new String[] {"up"})) {
      CommandLine cli = new CommandLine(new KilnCli());
      CommandLine.ParseResult parsed = cli.parseArgs(args);
      CommandLine.ParseResult sub = parsed.subcommand();
      assertThat(sub.matchedOptionValue("--host", "unset")).as(String.join(" ", args)).isEqualTo("unset");
      assertThat(sub.commandSpec().findOption("--host").defaultValue()).as(String.join(" ", args))
          .isEqualTo("127.0.0.1");
    }
    assertThat(ClusterOptions.head("127.0.0.1", 0).host()).isEqualTo("127.0.0.1");
    for (String wildcard : List.of("0.0.0.0", "::", "[::]", "")) {
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> ClusterOptions.head(wildcard, 0))
          .isInstanceOf(IllegalArgumentException.class);
    }
  }
}
