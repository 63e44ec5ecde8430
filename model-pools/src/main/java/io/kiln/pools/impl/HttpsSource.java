package io.kiln.pools.impl;

import io.kiln.pools.ModelLoadException;
import io.kiln.runtime.TimeoutPolicy;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Locale;
import java.util.OptionalLong;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Downloads one {@code https://} (or loopback {@code http://}) file to disk, checking its SHA-256 as it streams and
 * logging progress at every tenth of the size (or every few seconds when the size is unknown). A server that goes
 * quiet fails the download after the read timeout: the headers are bounded by the request's timeout, the body by
 * {@link StallWatch}, which closes the body's stream when no byte came for that long (the JDK client bounds only the
 * wait for the headers), so a stalled download fails its load instead of holding the worker until its load timeout.
 */
final class HttpsSource {

  private static final Logger log = LoggerFactory.getLogger(HttpsSource.class);
  private static final Duration CONNECT_TIMEOUT = TimeoutPolicy.MODEL_DOWNLOAD_CONNECT.timeout();
  private static final long PROGRESS_NANOS = 5_000_000_000L;

  private final HttpClient client;
  private final long maxBytes;
  private final Duration readTimeout;

  HttpsSource(Path caPem, long maxBytes, Duration readTimeout) {
    this.maxBytes = maxBytes;
    this.readTimeout = readTimeout;
    HttpClient.Builder b = HttpClient.newBuilder().connectTimeout(CONNECT_TIMEOUT)
        .followRedirects(HttpClient.Redirect.NORMAL);
    if (caPem != null) {
      b.sslContext(trusting(caPem));
    }
    this.client = b.build();
  }

  /** An SSL context trusting exactly the certificates of a PEM file (not the JVM's store besides). */
  static SSLContext trusting(Path caPem) {
    try (InputStream in = Files.newInputStream(caPem)) {
      KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
      store.load(null, null);
      int i = 0;
      for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        store.setCertificateEntry("ca-" + i++, c);
      }
      if (i == 0) {
        throw new ModelLoadException("kiln.model.ca / KILN_MODEL_CA: " + caPem + " holds no PEM certificate");
      }
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(store);
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(null, tmf.getTrustManagers(), null);
      return ctx;
    } catch (IOException | GeneralSecurityException e) {
      throw new ModelLoadException("kiln.model.ca / KILN_MODEL_CA: cannot read the CA file " + caPem + ": " + e, e);
    }
  }

  /** Streams {@code uri} into {@code file}, failing (and leaving the file to the caller) on a wrong digest. */
  void download(URI uri, String sha256, Path file) throws IOException {
    HttpResponse<InputStream> response = send(uri, HttpRequest.newBuilder(uri).GET().build());
    try (InputStream body = response.body()) {
      if (response.statusCode() != 200) {
        throw new ModelLoadException("model " + uri + ": the server answered HTTP " + response.statusCode());
      }
      OptionalLong length = response.headers().firstValueAsLong("content-length");
      String actual = copy(uri, body, file, length.orElse(-1));
      if (!actual.equals(sha256)) {
        throw new ModelLoadException("model " + uri + ": sha256 mismatch: expected " + sha256 + ", got " + actual);
      }
    }
  }

  /** Sends {@code request} (about model {@code uri}), its body left to read. */
  HttpResponse<InputStream> send(URI uri, HttpRequest request) {
    HttpRequest bounded = request.timeout().isPresent() ? request
        : HttpRequest.newBuilder(request, (name, value) -> true).timeout(readTimeout).build();
    try {
      return client.send(bounded, HttpResponse.BodyHandlers.ofInputStream());
    } catch (java.net.http.HttpTimeoutException e) {
      throw new ModelLoadException("model " + uri + ": no answer within the read timeout ("
          + readTimeout.toMillis() + " ms, kiln.model.readTimeoutMs)", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ModelLoadException("model " + uri + ": interrupted while downloading", e);
    } catch (IOException e) {
      throw new ModelLoadException("model " + uri + ": download failed: " + e, e);
    }
  }

  /** Copies {@code in} to {@code file}, returning the hex SHA-256 of what it copied. */
  String copy(URI uri, InputStream in, Path file, long total) throws IOException {
    if (total > maxBytes) {
      throw new ModelLoadException("model " + uri + " is " + total + " bytes, more than kiln.model.maxBytes ("
          + maxBytes + ")");
    }
    MessageDigest digest;
    try {
      digest = MessageDigest.getInstance("SHA-256");
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
    byte[] buf = new byte[256 * 1024];
    long n = 0;
    long nextTenth = 1;
    long start = System.nanoTime();
    long lastLog = start;
    log.info("model {}: downloading{}", uri, total >= 0 ? " " + total + " bytes" : "");
    try (OutputStream out = Files.newOutputStream(file); StallWatch watch = StallWatch.watch(in, readTimeout)) {
      for (int r = watch.read(buf); r >= 0; r = watch.read(buf)) {
        n += r;
        if (n > maxBytes) {
          throw new ModelLoadException("model " + uri + " is more than kiln.model.maxBytes (" + maxBytes + ") bytes");
        }
        digest.update(buf, 0, r);
        out.write(buf, 0, r);
        long now = System.nanoTime();
        boolean tenth = total > 0 && n * 10 >= nextTenth * total;
        if (tenth || now - lastLog >= PROGRESS_NANOS) {
          while (total > 0 && n * 10 >= nextTenth * total) {
            nextTenth++;
          }
          lastLog = now;
          log.info(String.format(Locale.ROOT, "model %s: %d / %s bytes%s", uri, n, total >= 0 ? total : "?",
              total > 0 ? String.format(Locale.ROOT, " (%d %%)", n * 100 / total) : ""));
        }
      }
    } catch (IOException e) {
      if (StallWatch.stalled(e)) {
        throw new ModelLoadException("model " + uri + ": no data for " + readTimeout.toMillis()
            + " ms (kiln.model.readTimeoutMs) after " + n + " bytes; the download was abandoned", e);
      }
      throw e;
    }
    if (total >= 0 && n != total) {
      throw new ModelLoadException("model " + uri + ": the download stopped at " + n + " of " + total + " bytes");
    }
    log.info(String.format(Locale.ROOT, "model %s: downloaded %d bytes in %.1f s", uri, n,
        (System.nanoTime() - start) / 1e9));
    return HexFormat.of().formatHex(digest.digest());
  }
}
