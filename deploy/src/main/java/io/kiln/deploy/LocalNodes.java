package io.kiln.deploy;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Nodes started from this Kiln checkout ({@code .kiln/nodes/<nodeId>.json}: pid and ports), so that
 * {@code kiln status/deploy/stop} find the local node without being told its address.
 */
final class LocalNodes {

  /** What a running node records about itself. */
  record Entry(String nodeId, long pid, String host, int httpPort, int grpcPort, int clusterPort, boolean head) {
    String httpAddress() {
      return "http://" + host + ":" + httpPort;
    }
  }

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
      Files.move(tmp, dir().resolve(e.nodeId() + ".json"), java.nio.file.StandardCopyOption.ATOMIC_MOVE,
          java.nio.file.StandardCopyOption.REPLACE_EXISTING);
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

  /** Recorded nodes whose process is still alive (stale entries are dropped). */
  static List<Entry> alive() {
    List<Entry> out = new ArrayList<>();
    if (!Files.isDirectory(dir())) {
      return out;
    }
    try (Stream<Path> files = Files.list(dir())) {
      for (Path p : files.filter(f -> f.toString().endsWith(".json")).toList()) {
        try {
          Entry e = JSON.readValue(p.toFile(), Entry.class);
          if (ProcessHandle.of(e.pid()).map(ProcessHandle::isAlive).orElse(false)) {
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
    out.sort((a, b) -> Boolean.compare(b.head(), a.head()));
    return out;
  }

  /** The management address to use: explicit, else the first local node (head first), else the default. */
  static String address(String explicit) {
    if (explicit != null && !explicit.isBlank()) {
      return explicit;
    }
    List<Entry> nodes = alive();
    return nodes.isEmpty() ? "http://127.0.0.1:8000" : nodes.get(0).httpAddress();
  }
}
