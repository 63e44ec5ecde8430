package io.kiln.pools;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Remote model URIs: {@code https://host/path} (a file, or a {@code .tar.gz}/{@code .tgz}/{@code .zip} archive
 * unpacked into a folder), {@code http://} to a loopback host only, and {@code s3://bucket/key-or-prefix}. A
 * node downloads one into its model cache when a worker loads it (see docs/model-uris.md).
 *
 * <p>{@link ModelSpec#uri()} is a {@link java.nio.file.Path}, which folds {@code //} into {@code /}: every
 * method here accepts both spellings ({@code https://h/x} and {@code https:/h/x}), so a remote URI survives
 * the trip through a path.
 */
public final class ModelUris {

  public static final String HTTPS = "https";
  public static final String HTTP = "http";
  public static final String S3 = "s3";
  /** The schemes a model uri may have; anything else with {@code scheme://} is refused. */
  public static final List<String> SCHEMES = List.of(HTTPS, HTTP, S3);
  /** The archive suffixes unpacked into a folder. */
  public static final List<String> ARCHIVES = List.of(".tar.gz", ".tgz", ".zip");

  private static final Pattern ANY_SCHEME = Pattern.compile("([A-Za-z][A-Za-z0-9+.-]*):/.*");
  private static final Pattern FOLDED = Pattern.compile("([A-Za-z][A-Za-z0-9+.-]*):/(?!/)(.*)");
  private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");

  private ModelUris() {
  }

  /** The scheme of {@code text} if it looks like {@code scheme://…} (or its folded {@code scheme:/…}). */
  public static Optional<String> scheme(String text) {
    var m = ANY_SCHEME.matcher(text.trim());
    return m.matches() ? Optional.of(m.group(1).toLowerCase(Locale.ROOT)) : Optional.empty();
  }

  /** Whether {@code text} names a remote model (one of {@link #SCHEMES}). */
  public static boolean isRemote(String text) {
    return scheme(text).filter(SCHEMES::contains).isPresent();
  }

  /** {@code text} with a folded {@code scheme:/host} restored to {@code scheme://host}. */
  public static String canonical(String text) {
    String t = text.trim();
    var m = FOLDED.matcher(t);
    return m.matches() && SCHEMES.contains(m.group(1).toLowerCase(Locale.ROOT)) ? m.group(1) + "://" + m.group(2) : t;
  }

  /** The remote URI {@code text} names, or empty if it is a path or {@code builtin:}. */
  public static Optional<URI> remote(String text) {
    if (!isRemote(text)) {
      return Optional.empty();
    }
    try {
      return Optional.of(new URI(canonical(text)));
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("uri: '" + text + "' is not a valid URI: " + e.getReason(), e);
    }
  }

  /**
   * What is wrong with {@code text} as a remote model uri, or null if nothing (or if it is no URI at all).
   * Unknown schemes, a missing host or bucket, {@code http://} to a host that is not loopback.
   */
  public static String problem(String text) {
    Optional<String> scheme = scheme(text);
    if (scheme.isEmpty()) {
      return null;
    }
    if (!SCHEMES.contains(scheme.get())) {
      return "unsupported uri scheme '" + scheme.get() + "': use a model folder path, builtin:<name>, or one of "
          + String.join(", ", SCHEMES.stream().map(s -> s + "://").toList());
    }
    URI uri;
    try {
      uri = new URI(canonical(text));
    } catch (URISyntaxException e) {
      return "'" + text + "' is not a valid URI: " + e.getReason();
    }
    String host = uri.getHost();
    if (host == null || host.isBlank()) {
      return "'" + text + "' names no " + (scheme.get().equals(S3) ? "bucket" : "host");
    }
    String path = uri.getPath() == null ? "" : uri.getPath();
    if (path.isEmpty() || path.equals("/")) {
      return "'" + text + "' names no " + (scheme.get().equals(S3) ? "key or prefix" : "file");
    }
    if (scheme.get().equals(HTTP) && !isLoopback(host)) {
      return "plain http:// is allowed only to a loopback host (localhost, 127.0.0.0/8, ::1), got '" + host
          + "': use https://";
    }
    if (!scheme.get().equals(S3) && path.endsWith("/")) {
      return "'" + text + "' ends with '/': an http(s) uri names one file or archive ("
          + String.join(", ", ARCHIVES) + ")";
    }
    return null;
  }

  /** What is wrong with a declared sha256 for {@code uri}, or null. Required for http(s), optional for s3. */
  public static String sha256Problem(String uri, String sha256) {
    boolean remote = uri != null && isRemote(uri);
    boolean given = sha256 != null && !sha256.isEmpty();
    if (!remote) {
      return given ? "only for remote uris (" + String.join(", ", SCHEMES) + ")" : null;
    }
    if (!given) {
      return scheme(uri).orElseThrow().equals(S3) ? null
          : "required for an " + scheme(uri).orElseThrow() + " uri (the hex SHA-256 of the file it names)";
    }
    return SHA256.matcher(sha256).matches() ? null
        : "must be 64 lower-case hex digits, got '" + sha256 + "'";
  }

  /** Whether {@code host} is loopback by name or literal (no DNS: a name resolves differently over time). */
  public static boolean isLoopback(String host) {
    String h = host.toLowerCase(Locale.ROOT);
    if (h.startsWith("[") && h.endsWith("]")) {
      h = h.substring(1, h.length() - 1);
    }
    return h.equals("localhost") || h.equals("::1") || h.equals("0:0:0:0:0:0:0:1")
        || h.matches("127\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}");
  }
}
