package io.kiln.deploy;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.locks.LockSupport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kiln logs [NODE] [--follow] [--lines N]}: a node's log. A node started from this checkout is read from its
 * file ({@code .kiln/logs/<node>.log}); any other node of the cluster, or any node with {@code --address}, through the
 * management API ({@code GET /api/v1/logs}), which asks the node over the cluster.
 */
@Command(name = "logs", description = "Print a node's log (--follow: and keep printing it). Nodes started from this"
    + " checkout are read from .kiln/logs; others, or any with --address, through a node's management API.")
final class LogsCommand implements Callable<Integer> {

  static final long POLL_NANOS = Duration.ofMillis(250).toNanos();

  @Spec
  CommandSpec spec;

  @Parameters(index = "0", arity = "0..1", paramLabel = "NODE", description = "the node (default: the local head"
      + " node, else the node --address names)")
  String node;

  @Option(names = {"-f", "--follow"}, description = "keep printing new lines until interrupted")
  boolean follow;

  @Option(names = {"-n", "--lines"}, defaultValue = "100", description = "how many of the last lines to print first"
      + " (1..10000, default ${DEFAULT-VALUE})")
  int lines;

  @Mixin
  ClientOptions client = new ClientOptions();

  @Override
  public Integer call() throws Exception {
    if (lines < 1 || lines > 10_000) {
      throw new CliException("--lines must be 1..10000, got " + lines);
    }
    PrintWriter out = spec.commandLine().getOut();
    if (client.address == null) {
      Path file = localFile();
      if (file != null) {
        printFile(file, out);
        return 0;
      }
    }
    printFromApi(out);
    return 0;
  }

  /** The log file of the node asked for (or of the first local node), if this checkout has one. */
  private Path localFile() {
    String id = node;
    if (id == null) {
      List<LocalNodes.Entry> alive = LocalNodes.alive();
      if (alive.isEmpty()) {
        return null;
      }
      id = alive.get(0).nodeId();
    }
    if (id.contains("/") || id.contains("\\") || id.startsWith(".")) {
      throw new CliException("not a node id: '" + id + "'");
    }
    Path f = LocalNodes.logs().resolve(id + ".log");
    return Files.isRegularFile(f) ? f : null;
  }

  private void printFile(Path file, PrintWriter out) throws IOException {
    long position;
    try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
      long size = f.length();
      long from = tailStart(f, size, lines);
      position = copy(f, from, size, out);
    }
    out.flush();
    while (follow && !Thread.currentThread().isInterrupted()) {
      LockSupport.parkNanos(POLL_NANOS);
      try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
        long size = f.length();
        if (size < position) {
          position = 0; // the file was truncated or replaced (a restarted node)
        }
        if (size > position) {
          position = copy(f, position, size, out);
          out.flush();
        }
      } catch (java.io.FileNotFoundException gone) {
        // removed for a moment: look again
      }
    }
  }

  /** Where the last {@code n} lines of the file begin: read backwards in blocks until n line ends are behind. */
  static long tailStart(RandomAccessFile f, long size, int n) throws IOException {
    byte[] block = new byte[64 * 1024];
    long end = size;
    int seen = 0;
    // A final line end closes the last line; it does not start another.
    if (size > 0) {
      f.seek(size - 1);
      if (f.read() == '\n') {
        end = size - 1;
      }
    }
    long pos = end;
    while (pos > 0) {
      int len = (int) Math.min(block.length, pos);
      pos -= len;
      f.seek(pos);
      f.readFully(block, 0, len);
      for (int i = len - 1; i >= 0; i--) {
        if (block[i] == '\n' && ++seen == n) {
          return pos + i + 1;
        }
      }
    }
    return 0;
  }

  private static long copy(RandomAccessFile f, long from, long to, PrintWriter out) throws IOException {
    f.seek(from);
    byte[] buf = new byte[64 * 1024];
    long pos = from;
    java.io.ByteArrayOutputStream pending = new java.io.ByteArrayOutputStream();
    while (pos < to) {
      int r = f.read(buf, 0, (int) Math.min(buf.length, to - pos));
      if (r < 0) {
        break;
      }
      pending.write(buf, 0, r);
      pos += r;
    }
    out.print(pending.toString(StandardCharsets.UTF_8));
    return pos;
  }

  private void printFromApi(PrintWriter out) throws IOException {
    StringBuilder q = new StringBuilder("api/v1/logs?lines=").append(lines);
    if (node != null) {
      q.append("&node=").append(URLEncoder.encode(node, StandardCharsets.UTF_8));
    }
    if (follow) {
      q.append("&follow=true");
    }
    try (InputStream body = client.client().stream(q.toString(), follow ? null : Duration.ofSeconds(30))) {
      BufferedReader r = new BufferedReader(new InputStreamReader(body, StandardCharsets.UTF_8));
      for (String line = r.readLine(); line != null; line = r.readLine()) {
        out.println(line);
        out.flush();
      }
    }
  }
}
