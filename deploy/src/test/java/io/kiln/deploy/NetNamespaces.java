package io.kiln.deploy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An isolated network of Linux network namespaces, made and removed by a test: a "switch" namespace holding a
 * bridge, and one namespace per host, each joined to the bridge by a veth pair and given its own address in a
 * private /24 chosen per run. Every interface is created inside the namespaces (a veth is made in the switch
 * namespace with its peer placed straight into the host's), so the root namespace's interfaces are never touched
 * and traffic between the hosts never leaves the namespaces made here. Names are {@code kiln-<run>-<host>} with a
 * random 6-hex run id; {@link #removeStale} deletes what an older run left behind.
 *
 * <p>Needs root and iproute2's {@code ip}; {@link #unavailable()} says why it cannot run, or null.
 */
final class NetNamespaces implements AutoCloseable {

  static final String PREFIX = "kiln-";
  private static final Pattern NAME = Pattern.compile("kiln-([0-9a-f]{6})-([a-z0-9]+)");
  private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(20);
  /**
   * A run's namespaces without an owner record are stale when none of them holds a process and the newest is older
   * than this (a run still making its network has none in it yet); {@code -Dkiln.netns.staleAfterSeconds} changes it.
   */
  private static final Duration STALE_AFTER = Duration.ofSeconds(Long.getLong("kiln.netns.staleAfterSeconds", 600));
  /** Where each run records the process that owns it ({@code <run>.owner}: pid and start time). */
  private static final Path OWNERS = Path.of(System.getProperty("java.io.tmpdir"), "kiln-netns");
  private static final String SWITCH = "sw";
  private static final String BRIDGE = "br0";

  private final String run;
  private final String subnet;
  private final Map<String, String> addresses = new LinkedHashMap<>();
  private final List<String> created = new ArrayList<>();

  private NetNamespaces(String run, int third) {
    this.run = run;
    this.subnet = "10.213." + third + ".";
  }

  /** Why namespaces cannot be made here (not Linux, not root, no {@code ip}), or null when they may be. */
  static String unavailable() {
    if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
      return "network namespaces need Linux, this is " + System.getProperty("os.name");
    }
    try {
      String status = Files.readString(Path.of("/proc/self/status"));
      Matcher m = Pattern.compile("(?m)^Uid:\\s+(\\d+)\\s+(\\d+)").matcher(status);
      if (m.find() && !m.group(2).equals("0")) {
        return "network namespaces need root (ip netns add), this test runs as uid " + m.group(2);
      }
    } catch (IOException e) {
      return "cannot read /proc/self/status to check for root: " + e;
    }
    try {
      Result r = exec(List.of("ip", "-V"));
      if (r.code() != 0) {
        return "iproute2's ip does not run: " + r.output();
      }
    } catch (IOException e) {
      return "iproute2's ip is not installed (" + e.getMessage() + ")";
    }
    return null;
  }

  /**
   * Makes the switch and one namespace per host ({@code hosts}, e.g. {@code n1}), each host with address
   * {@code 10.213.X.(10+i)}, {@code lo} up everywhere. On a failure the part already made is removed and an
   * {@link IllegalStateException} names the command that failed and what it said.
   */
  static NetNamespaces create(List<String> hosts) {
    String run = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt(1 << 24)).substring(2);
    NetNamespaces n = new NetNamespaces(run, 1 + ThreadLocalRandom.current().nextInt(254));
    try {
      Files.createDirectories(OWNERS);
      ProcessHandle self = ProcessHandle.current();
      Files.writeString(n.ownerFile(), self.pid() + " "
          + self.info().startInstant().map(Instant::toEpochMilli).orElse(0L) + "\n");
      String sw = n.add(SWITCH);
      n.ip("-n", sw, "link", "add", BRIDGE, "type", "bridge");
      n.ip("-n", sw, "link", "set", BRIDGE, "up");
      int i = 0;
      for (String h : hosts) {
        String ns = n.add(h);
        String address = n.subnet + (11 + i++);
        String port = "v-" + h;
        n.ip("-n", sw, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns);
        n.ip("-n", sw, "link", "set", port, "master", BRIDGE, "up");
        n.ip("-n", ns, "addr", "add", address + "/24", "dev", "eth0");
        n.ip("-n", ns, "link", "set", "eth0", "up");
        n.addresses.put(h, address);
      }
      // ip netns exec also remounts /sys for the namespace: where that is refused, no node could start in one.
      List<String> probe = new ArrayList<>(n.exec(hosts.get(0)));
      probe.add("true");
      Result r = exec(probe);
      if (r.code() != 0) {
        throw new IOException("'" + String.join(" ", probe) + "' failed (" + r.code() + "): " + r.output().strip());
      }
      return n;
    } catch (IOException | RuntimeException e) {
      n.close();
      throw new IllegalStateException(e.getMessage(), e);
    }
  }

  private String add(String host) throws IOException {
    String ns = PREFIX + run + "-" + host;
    ip("netns", "add", ns);
    created.add(ns);
    ip("-n", ns, "link", "set", "lo", "up");
    return ns;
  }

  String run() {
    return run;
  }

  private Path ownerFile() {
    return OWNERS.resolve(run + ".owner");
  }

  /** The namespace of {@code host}. */
  String namespace(String host) {
    return PREFIX + run + "-" + host;
  }

  /** The address of {@code host} (not loopback: its veth's). */
  String address(String host) {
    String a = addresses.get(host);
    if (a == null) {
      throw new IllegalArgumentException("no host " + host + " in " + addresses.keySet());
    }
    return a;
  }

  /**
   * Pulls {@code host}'s cable: its port on the bridge goes down, so nothing it sends reaches the others and nothing
   * reaches it (not even the resets its kernel sends when its processes die).
   */
  void disconnect(String host) throws IOException {
    ip("-n", namespace(SWITCH), "link", "set", "v-" + host, "down");
  }

  /** Plugs {@code host}'s cable back in: its port on the bridge comes up again (the undoing of {@link #disconnect}). */
  void reconnect(String host) throws IOException {
    ip("-n", namespace(SWITCH), "link", "set", "v-" + host, "up");
  }

  /** What runs a command inside {@code host}'s namespace: {@code ip netns exec NS}, which execs the command. */
  List<String> exec(String host) {
    return List.of("ip", "netns", "exec", namespace(host));
  }

  /**
   * The TCP sockets listening inside {@code host}'s namespace, as {@code address:port} ({@code /proc/net/tcp} and
   * {@code tcp6} read from inside it; a wildcard shows as {@code 0.0.0.0} or {@code ::}).
   */
  List<String> listeners(String host) throws IOException {
    List<String> out = new ArrayList<>();
    for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
      List<String> cmd = new ArrayList<>(exec(host));
      cmd.addAll(List.of("cat", table));
      Result r = exec(cmd);
      if (r.code() != 0) {
        throw new IOException("reading " + table + " in " + namespace(host) + ": " + r.output());
      }
      for (String line : r.output().lines().skip(1).toList()) {
        String[] f = line.strip().split("\\s+");
        if (f.length > 3 && f[3].equals("0A")) { // TCP_LISTEN
          out.add(socketAddress(f[1]));
        }
      }
    }
    return out;
  }

  /** {@code 0B0DD50A:1F40} (the kernel's hex, each 32-bit word in host order, little-endian here) as {@code 10.213.13.11:8000}. */
  static String socketAddress(String hex) {
    String[] parts = hex.split(":");
    byte[] raw = HexFormat.of().parseHex(parts[0]);
    byte[] address = new byte[raw.length];
    for (int w = 0; w < raw.length; w += 4) {
      for (int i = 0; i < 4; i++) {
        address[w + i] = raw[w + 3 - i];
      }
    }
    try {
      String a = java.net.InetAddress.getByAddress(address).getHostAddress();
      return (a.contains(":") ? "[" + a + "]" : a) + ":" + Integer.parseInt(parts[1], 16);
    } catch (java.net.UnknownHostException e) {
      throw new IllegalArgumentException(hex, e);
    }
  }

  /** The pids of the processes inside {@code ns}. */
  static List<Long> pids(String ns) {
    try {
      Result r = exec(List.of("ip", "netns", "pids", ns));
      return r.output().lines().map(String::strip).filter(s -> s.matches("\\d+")).map(Long::valueOf).toList();
    } catch (IOException e) {
      return List.of();
    }
  }

  /** Removes this run's namespaces (and with the switch, its bridge and every veth); the caller stopped their processes. */
  @Override
  public void close() {
    for (int i = created.size() - 1; i >= 0; i--) {
      String ns = created.get(i);
      for (long pid : pids(ns)) {
        // Only processes this run started live in its namespaces: the test's own nodes and client.
        ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
      }
      try {
        Result r = exec(List.of("ip", "netns", "del", ns));
        if (r.code() != 0) {
          System.err.println("MultiHost: could not remove namespace " + ns + ": " + r.output());
        }
      } catch (IOException e) {
        System.err.println("MultiHost: could not remove namespace " + ns + ": " + e);
      }
    }
    created.clear();
    try {
      Files.deleteIfExists(ownerFile());
    } catch (IOException ignored) {
      // a leftover owner file of a dead process only marks namespaces that are gone already
    }
  }

  /**
   * Deletes the namespaces of earlier runs ({@code kiln-<6 hex>-*}) whose owner process is gone, first killing what
   * still runs in them (only those runs' own nodes and clients run there); a run without an owner record is deleted
   * once none of its namespaces holds a process and it is older than {@link #STALE_AFTER}. Returns what it removed
   * and what it left, with why.
   */
  static List<String> removeStale() throws IOException {
    Map<String, List<String>> byRun = new TreeMap<>();
    Result list = exec(List.of("ip", "netns", "list"));
    for (String line : list.output().lines().toList()) {
      String name = line.strip().split("\\s+")[0];
      Matcher m = NAME.matcher(name);
      if (m.matches()) {
        byRun.computeIfAbsent(m.group(1), k -> new ArrayList<>()).add(name);
      }
    }
    List<String> report = new ArrayList<>();
    for (Map.Entry<String, List<String>> e : byRun.entrySet()) {
      String why = stale(e.getKey(), e.getValue());
      if (why.startsWith("left")) {
        report.add(why + ": " + e.getValue());
        continue;
      }
      for (String ns : e.getValue()) {
        for (long pid : pids(ns)) {
          ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }
        Result r = exec(List.of("ip", "netns", "del", ns));
        report.add((r.code() == 0 ? "removed stale " : "could not remove stale ") + ns + " (" + why + ")"
            + (r.code() == 0 ? "" : ": " + r.output()));
      }
      Files.deleteIfExists(OWNERS.resolve(e.getKey() + ".owner"));
    }
    return report;
  }

  /** Why run {@code run}'s namespaces are stale, or, starting with "left", why they are not. */
  private static String stale(String run, List<String> namespaces) throws IOException {
    Path owner = OWNERS.resolve(run + ".owner");
    if (Files.isRegularFile(owner)) {
      String[] f = Files.readString(owner).strip().split("\\s+");
      long pid = Long.parseLong(f[0]);
      long started = f.length > 1 ? Long.parseLong(f[1]) : 0;
      boolean alive = ProcessHandle.of(pid).filter(ProcessHandle::isAlive)
          .filter(h -> h.info().startInstant().map(i -> Math.abs(i.toEpochMilli() - started) < 1000).orElse(true))
          .isPresent();
      return alive ? "left (its owner, pid " + pid + ", still runs)" : "its owner, pid " + pid + ", is gone";
    }
    boolean busy = false;
    Instant newest = Instant.EPOCH;
    for (String ns : namespaces) {
      busy |= !pids(ns).isEmpty();
      Path f = Path.of("/run/netns", ns);
      if (Files.exists(f)) {
        Instant t = Files.getLastModifiedTime(f).toInstant();
        newest = t.isAfter(newest) ? t : newest;
      }
    }
    if (busy) {
      return "left (no owner record, and processes run in it)";
    }
    if (Duration.between(newest, Instant.now()).compareTo(STALE_AFTER) < 0) {
      return "left (no owner record, younger than " + STALE_AFTER + ")";
    }
    return "no owner record, empty, older than " + STALE_AFTER;
  }

  private void ip(String... args) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add("ip");
    cmd.addAll(List.of(args));
    Result r = exec(cmd);
    if (r.code() != 0) {
      throw new IOException("'" + String.join(" ", cmd) + "' failed (" + r.code() + "): " + r.output().strip());
    }
  }

  record Result(int code, String output) {
  }

  static Result exec(List<String> cmd) throws IOException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
    try {
      // These commands print a few lines at most, far less than a pipe holds: waiting first cannot block them.
      if (!p.waitFor(COMMAND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
        p.destroyForcibly();
        throw new IOException("'" + String.join(" ", cmd) + "' did not finish within " + COMMAND_TIMEOUT);
      }
      return new Result(p.exitValue(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
      throw new IOException("interrupted running " + cmd, e);
    }
  }
}
