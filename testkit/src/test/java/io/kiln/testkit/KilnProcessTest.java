package io.kiln.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("slow")
class KilnProcessTest {

  /**
   * A child JVM for these tests: prints its arguments' lines, then waits for stdin to close (or exits with 3, or with
   * {@code hold} waits until it is signalled: SIGTERM closes stdin too, and a main that returned on that EOF could
   * win the race against the signal's exit code 143).
   */
  public static final class Child {
    public static void main(String[] args) throws Exception {
      boolean hold = false;
      for (String a : args) {
        if (a.equals("exit")) {
          System.out.println("giving up");
          System.exit(3);
        }
        if (a.equals("hold")) {
          hold = true;
          continue;
        }
        System.out.println(a);
      }
      System.out.flush();
      while (hold) {
        java.util.concurrent.locks.LockSupport.park(); // until a signal ends the JVM
      }
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
      while (in.readLine() != null) {
        // until the parent closes stdin
      }
      System.out.println("stdin closed, env " + System.getenv("KILN_PROCESS_TEST"));
    }
  }

  private static KilnProcess.Builder child(Path dir, String... args) {
    return KilnProcess.java(Child.class.getName()).jvmFlags("-Xmx64m").args(args).name("child")
        .log(dir.resolve("child.out")).stdinPipe();
  }

  @Test
  void waitsForALogLineAndReadsTheRestOfIt(@TempDir Path dir) {
    try (KilnProcess p = child(dir, "hello", "READY 4711").start()) {
      assertThat(p.awaitLogLine("READY ", Duration.ofSeconds(60))).isEqualTo("4711");
      p.awaitLog("hello", Duration.ofSeconds(5));
      assertThat(p.isAlive()).isTrue();
    }
  }

  @Test
  void aProcessThatExitsFailsTheWaitAtOnceWithItsCodeAndLogTail(@TempDir Path dir) {
    try (KilnProcess p = child(dir, "starting", "exit").start()) {
      long t0 = System.nanoTime();
      assertThatThrownBy(() -> p.awaitLog("never printed", Duration.ofMinutes(5)))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining("child exited with 3 before logged 'never printed'")
          .hasMessageContaining("starting\ngiving up");
      assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofMinutes(1));
    }
  }

  @Test
  void aTimeoutNamesWhatWasAwaitedTheLastProbeFailureAndTheLogTail(@TempDir Path dir) {
    try (KilnProcess p = child(dir, "up").start()) {
      p.awaitLog("up", Duration.ofSeconds(60));
      assertThatThrownBy(() -> p.await("a record", Duration.ofMillis(600), () -> {
        throw new java.io.IOException("half written");
      })).isInstanceOf(AssertionError.class)
          .hasMessageContaining("child: not a record within PT0.6S")
          .hasMessageContaining("half written")
          .hasMessageContaining("up");
    }
  }

  @Test
  void aProbeReturnsItsValueAndClosingStdinEndsANodeCleanly(@TempDir Path dir) {
    try (KilnProcess p = child(dir, "x").env("KILN_PROCESS_TEST", "on").start()) {
      assertThat(p.await("x", Duration.ofSeconds(60), () -> p.log().contains("x") ? Optional.of(42) : Optional.empty()))
          .isEqualTo(42);
      p.closeStdin();
      assertThat(p.awaitExit(Duration.ofSeconds(30))).isZero();
      assertThat(p.log()).contains("stdin closed, env on");
    }
  }

  @Test
  void stopIsSigtermAndKillIsSigkill(@TempDir Path dir) {
    KilnProcess a = child(dir, "a", "hold").log(dir.resolve("a.out")).start();
    a.awaitLog("a", Duration.ofSeconds(60));
    assertThat(a.stop(Duration.ofSeconds(30))).isEqualTo(143);
    KilnProcess b = child(dir, "b", "hold").log(dir.resolve("b.out")).start();
    b.awaitLog("b", Duration.ofSeconds(60));
    b.kill();
    assertThat(b.isAlive()).isFalse();
    assertThat(b.process().exitValue()).isEqualTo(137);
  }

  @Test
  void runReturnsTheCodeAndOutputOfACommand(@TempDir Path dir) {
    KilnProcess.Result r = KilnProcess.command(java.util.List.of("sh", "-c", "echo out; echo err >&2; exit 5"))
        .directory(dir).log(dir.resolve("sh.out")).run(Duration.ofSeconds(30));
    assertThat(r.code()).isEqualTo(5);
    assertThat(r.output()).contains("out").contains("err");
    assertThatThrownBy(() -> KilnProcess.command(java.util.List.of("sleep", "30")).name("sleeper")
        .log(dir.resolve("sleep.out")).run(Duration.ofMillis(300)))
        .isInstanceOf(AssertionError.class).hasMessageContaining("sleeper did not end within PT0.3S");
  }

  @Test
  void awaitsAnHttpAnswer(@TempDir Path dir) throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/ready", x -> {
      x.sendResponseHeaders(200, -1);
      x.close();
    });
    server.start();
    try (KilnProcess p = child(dir, "serving").start()) {
      p.awaitHttp(server.getAddress().getPort(), "/ready", Duration.ofSeconds(30));
      assertThatThrownBy(() -> p.awaitHttp(server.getAddress().getPort(), "/missing", Duration.ofMillis(500)))
          .hasMessageContaining("not answering GET http://127.0.0.1:");
    } finally {
      server.stop(0);
    }
  }
}
