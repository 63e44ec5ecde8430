package io.kiln.pipelines.impl;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;

/**
 * Reads a fetch step's URI into a local file, bounded in size: {@code file://} paths under allowed roots
 * (symbolic links resolved first, so a link cannot lead outside them) and {@code http://}/{@code https://}
 * GETs. Blocking; thread-safe.
 */
public final class Sources {

  /**
   * Result of one copy.
   *
   * @param data the bytes copied when the caller asked to keep them and they fit; else null
   */
  public record Copied(long bytes, String sha256, byte[] data) {

    public Copied(long bytes, String sha256) {
      this(bytes, sha256, null);
    }
  }

  private final List<Path> fileRoots;
  private final Duration httpTimeout;
  private final HttpClient http;

  /**
   * @param fileRoots folders {@code file://} URIs must lie under (resolved to real paths); empty refuses all
   */
  public Sources(List<Path> fileRoots, Duration httpTimeout) {
    this.fileRoots = fileRoots.stream().map(Sources::real).toList();
    this.httpTimeout = httpTimeout;
    this.http = HttpClient.newBuilder().connectTimeout(httpTimeout).followRedirects(HttpClient.Redirect.NORMAL)
        .build();
  }

  /** The URI's scheme, checked: {@code file}, {@code http} or {@code https}. */
  public static String scheme(String uri) {
    URI u;
    try {
      u = new URI(uri);
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("'" + uri + "' is not a valid URI: " + e.getReason());
    }
    String s = u.getScheme() == null ? "" : u.getScheme().toLowerCase(java.util.Locale.ROOT);
    if (!s.equals("file") && !s.equals("http") && !s.equals("https")) {
      throw new IllegalArgumentException("'" + uri + "': only file://, http:// and https:// URIs can be fetched");
    }
    return s;
  }

  /**
   * Copies {@code uri} into {@code target} (created; must not exist), computing its SHA-256, and forces it
   * to disk.
   *
   * @throws IOException if the source cannot be read, is larger than {@code maxBytes}, or is refused
   */
  public Copied copy(String uri, long maxBytes, Path target) throws IOException {
    return copy(uri, maxBytes, target, true);
  }

  /**
   * As {@link #copy(String, long, Path)}; with {@code force} false the file is left for the caller to force
   * (a group of them together, see {@link FileSync}).
   */
  public Copied copy(String uri, long maxBytes, Path target, boolean force) throws IOException {
    return copy(uri, maxBytes, target, force, 0);
  }

  /** As {@link #copy(String, long, Path, boolean)}, keeping the bytes in {@link Copied#data} if at most {@code keep}. */
  public Copied copy(String uri, long maxBytes, Path target, boolean force, int keep) throws IOException {
    String scheme = scheme(uri);
    try (InputStream in = scheme.equals("file") ? openFile(uri, maxBytes) : openHttp(uri, maxBytes)) {
      return write(in, maxBytes, target, uri, force, keep);
    }
  }

  private InputStream openFile(String uri, long maxBytes) throws IOException {
    Path p;
    try {
      p = Path.of(new URI(uri));
    } catch (URISyntaxException | IllegalArgumentException e) {
      throw new IOException("'" + uri + "' is not a usable file URI (file:///absolute/path): " + e.getMessage());
    }
    Path realPath;
    try {
      realPath = p.toRealPath();
    } catch (NoSuchFileException e) {
      throw new FileNotFoundException("no such file: " + p);
    }
    if (fileRoots.stream().noneMatch(realPath::startsWith)) {
      throw new IOException("file " + p + " is outside the folders this node may read inputs from " + fileRoots);
    }
    if (!Files.isRegularFile(realPath)) {
      throw new IOException(p + " is not a regular file");
    }
    long size = Files.size(realPath);
    if (size > maxBytes) {
      throw new IOException(p + " is " + size + " bytes; the step allows at most " + maxBytes);
    }
    return Files.newInputStream(realPath);
  }

  private InputStream openHttp(String uri, long maxBytes) throws IOException {
    HttpRequest req = HttpRequest.newBuilder(URI.create(uri)).timeout(httpTimeout).GET().build();
    HttpResponse<InputStream> resp;
    try {
      resp = http.send(req, HttpResponse.BodyHandlers.ofInputStream());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while fetching " + uri);
    }
    if (resp.statusCode() != 200) {
      resp.body().close();
      throw new IOException("GET " + uri + " answered HTTP " + resp.statusCode());
    }
    long declared = resp.headers().firstValueAsLong("Content-Length").orElse(-1);
    if (declared > maxBytes) {
      resp.body().close();
      throw new IOException("GET " + uri + " is " + declared + " bytes; the step allows at most " + maxBytes);
    }
    return resp.body();
  }

  private static Copied write(InputStream in, long maxBytes, Path target, String uri, boolean force, int keep)
      throws IOException {
    MessageDigest sha = sha256();
    long total = 0;
    java.io.ByteArrayOutputStream kept = keep > 0 ? new java.io.ByteArrayOutputStream() : null;
    try (FileChannel ch = FileChannel.open(target, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      OutputStream out = new DigestOutputStream(Channels.newOutputStream(ch), sha);
      byte[] buf = new byte[64 * 1024];
      int n;
      while ((n = in.read(buf)) >= 0) {
        total += n;
        if (total > maxBytes) {
          throw new IOException(uri + " is larger than the step allows (" + maxBytes + " bytes)");
        }
        out.write(buf, 0, n);
        if (kept != null && total <= keep) {
          kept.write(buf, 0, n);
        } else {
          kept = null;
        }
      }
      out.flush();
      if (force) {
        ch.force(true);
      }
    }
    return new Copied(total, HexFormat.of().formatHex(sha.digest()), kept == null ? null : kept.toByteArray());
  }

  /** Lowercase hex SHA-256 of a string's UTF-8 bytes. */
  public static String sha256Hex(String s) {
    return HexFormat.of().formatHex(sha256().digest(s.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK lacks SHA-256", e);
    }
  }

  private static Path real(Path p) {
    try {
      return p.toRealPath();
    } catch (IOException e) {
      return p.toAbsolutePath().normalize();
    }
  }
}
