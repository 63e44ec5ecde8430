package io.kiln.pools;

import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Names of a deployment's actors, as the architecture fixes them: the pool manager of a node is
 * {@code kiln/pool/<name>@<version>/<nodeId>} and its workers {@code kiln/pool/<name>@<version>/<nodeId>/worker-<i>}
 * (0-based). The version is part of every name so a new version never adopts an old version's detached
 * actors. Node ids must not contain '/'. Pure functions; thread-safe.
 *
 * <p>A pool whose name starts with {@value #NODE_LOCAL_PREFIX} is a node's own (the pool a node warms its
 * serving path on before it reports ready): no deployment can be named so (deployment names start with a
 * letter or digit), so the serve controller never adopts, reconciles or retires it, and status does not list it.
 */
public final class PoolNames {

  public static final String PREFIX = "kiln/pool/";
  public static final String WORKER_PREFIX = "worker-";
  /** The first character of a node-local pool's name. */
  public static final String NODE_LOCAL_PREFIX = "_";

  private static final Pattern NAME = Pattern.compile(
      Pattern.quote(PREFIX) + "([^/@]+)@([^/]+)/([^/]+)(?:/" + WORKER_PREFIX + "(0|[1-9][0-9]{0,8}))?");

  private PoolNames() {
  }

  /** {@code name@version}. */
  public static String deployment(String name, String version) {
    return Objects.requireNonNull(name, "name") + "@" + Objects.requireNonNull(version, "version");
  }

  /** {@code kiln/pool/name@version/}: every actor of one deployment version starts with it. */
  public static String prefix(String name, String version) {
    return PREFIX + deployment(name, version) + "/";
  }

  public static String poolManager(String name, String version, String nodeId) {
    return prefix(name, version) + checkNode(nodeId);
  }


  public static String worker(String name, String version, String nodeId, int index) {
    if (index < 0) {
      throw new IllegalArgumentException("worker index must be >= 0, got " + index);
    }
    return poolManager(name, version, nodeId) + "/" + WORKER_PREFIX + index;
  }


  /** Whether {@code name} (a pool's deployment name) is a node-local pool's; see the class comment. */
  public static boolean isNodeLocal(String name) {
    return name.startsWith(NODE_LOCAL_PREFIX);
  }

  /** The parts of a pool actor's name, or empty if {@code actorName} is not one. */
  public static Optional<Parsed> parse(String actorName) {
    Matcher m = NAME.matcher(actorName);
    if (!m.matches()) {
      return Optional.empty();
    }
    OptionalInt worker = m.group(4) == null ? OptionalInt.empty() : OptionalInt.of(Integer.parseInt(m.group(4)));
    return Optional.of(new Parsed(m.group(1), m.group(2), m.group(3), worker));
  }

  private static String checkNode(String nodeId) {
    Objects.requireNonNull(nodeId, "nodeId");
    if (nodeId.isEmpty() || nodeId.indexOf('/') >= 0) {
      throw new IllegalArgumentException("node id must be non-empty and free of '/': '" + nodeId + "'");
    }
    return nodeId;
  }

  /**
   * A parsed pool actor name.
   *
   * @param workerIndex the worker's index, or empty for the pool manager
   */
  public record Parsed(String name, String version, String nodeId, OptionalInt workerIndex) {

    public boolean isManager() {
      return workerIndex.isEmpty();
    }

    /** Whether the actor belongs to a node-local pool (see the class comment). */
    public boolean isNodeLocal() {
      return PoolNames.isNodeLocal(name);
    }
  }
}
