package io.kiln.deploy;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Nodes started from this Kiln checkout ({@code .kiln/nodes/<nodeId>.json}: pid, process start time and
 * ports), so that {@code kiln status/deploy/stop} find the local node without being told its address. The
 * folder is {@code $kiln.home/.kiln} ({@code kiln.home} defaults to the working directory).
 */
final class LocalNodes {

  /**
   * What a running node records about itself.
   *
   * @param startedAtMillis when its process started (epoch ms), so that a recycled pid is not mistaken for it;
   *     0 if unknown
   */
  record Entry(String nodeId, long pid, long startedAtMillis, String host, int httpPort, int grpcPort,
               int clusterPort, boolean head, String tlsCert) {

    /** An entry for this process. */
    static Entry current(String nodeId, String host, int httpPort, int grpcPort, int clusterPort, boolean head) {
      return current(nodeId, host, httpPort, grpcPort, clusterPort, head, null);
    }

    /** An entry for this process serving TLS with the certificate chain {@code tlsCert} (null: plain text). */
    static Entry current(String nodeId, String host, int httpPort, int grpcPort, int clusterPort, boolean head,
                         io.kiln.gateway.TlsFiles tls) {
      ProcessHandle self = ProcessHandle.current();
      long started = self.info().startInstant().map(java.time.Instant::toEpochMilli).orElse(0L);
      return new Entry(nodeId, self.pid(), started, host, httpPort, grpcPort, clusterPort, head,
          tls == null ? null : tls.certChain().toString());
    }

    String httpAddress() {
      return (tlsCert == null ? "http://" : "https://") + host + ":" + httpPort;
    }
  }

  /** Two reads of one process's start time may differ by the clock tick they are derived from. */
  private static final long START_TOLERANCE_MILLIS = 1000;

  private static final ObjectMapper JSON = new ObjectMapper();

  private LocalNodes() {
  }

  static Path home() {
    return Path.of(System.getProperty("kiln.home", ".")).toAbsolutePath().normalize();
  }

  static Path dir() {
    return home().resolve(".kiln").resolve("nodes");
  }

  static Path logs() {
    return home().resolve(".kiln").resolve("logs");
  }

  static void write(Entry e) {
    try {
      Files.createDirectories(dir());
      Path tmp = dir().resolve(e.nodeId() + ".json.tmp");
      JSON.writeValue(tmp.toFile(), e);
      Files.move(tmp, dir().resolve(e.nodeId() + ".json"), StandardCopyOption.ATOMIC_MOVE,
          StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException ex) {
      throw new UncheckedIOException(ex);
    }
  }

  static void remove(String nodeId) {
    try {
      Files.deleteIfExists(dir().resolve(nodeId + ".json"));
    } catch (IOException ignored) {
      // best effort
    }
  }

  /** The entry's process, if it is still the one that wrote the entry and alive. */
  static Optional<ProcessHandle> process(Entry e) {
    return ProcessHandle.of(e.pid()).filter(ProcessHandle::isAlive).filter(h -> e.startedAtMillis() == 0
        || h.info().startInstant().map(i -> Math.abs(i.toEpochMilli() - e.startedAtMillis()) <= START_TOLERANCE_MILLIS)
            .orElse(true));
  }

  /** Recorded nodes whose process is still running, head first (stale entries are deleted). */
  static List<Entry> alive() {
    List<Entry> out = new ArrayList<>();
    if (!Files.isDirectory(dir())) {
      return out;
    }
    try (Stream<Path> files = Files.list(dir())) {
      for (Path p : files.filter(f -> f.toString().endsWith(".json")).toList()) {
        try {
          Entry e = JSON.readValue(p.toFile(), Entry.class);
          if (process(e).isPresent()) {
            out.add(e);
          } else {
            Files.deleteIfExists(p);
          }
        } catch (IOException ignored) {
          // a half-written or foreign file: skip it
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    out.sort(Comparator.comparing((Entry e) -> !e.head()).thenComparing(Entry::nodeId));
    return out;
  }

  /** The management address to use: explicit, else the first local node (head first), else the default. */
  static String address(String explicit) {
    return target(explicit).address();
  }

  /**
   * Where to send management calls: {@code explicit}, else the first local node (head first) with the
   * certificate it serves (trusted for it), else the default.
   */
  static Target target(String explicit) {
    if (explicit != null && !explicit.isBlank()) {
      return new Target(explicit, null);
    }
    List<Entry> nodes = alive();
    return nodes.isEmpty() ? new Target("http://127.0.0.1:8000", null)
        : new Target(nodes.get(0).httpAddress(), nodes.get(0).tlsCert() == null ? null : Path.of(nodes.get(0).tlsCert()));
  }

  /** A management address and, for a local node serving TLS, its certificate chain (else null). */
  record Target(String address, Path trust) {
  }
}
