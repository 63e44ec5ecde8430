package io.kiln.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The CLI's client of a node's management API ({@code /api/v1/}). Blocking; for the command line only.
 * Failures become {@link CliException}s whose message is what the user sees.
 */
final class ManagementClient {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final HttpClient http;
  private final URI base;
  private final String token;

  ManagementClient(String address, String token) {
    this(address, token, null);
  }

  /** @param trust PEM certificates to trust for an https:// address; null for the JDK's trusted authorities */
  ManagementClient(String address, String token, java.nio.file.Path trust) {
    String a = address.startsWith("http://") || address.startsWith("https://") ? address : "http://" + address;
    this.base = URI.create(a.endsWith("/") ? a : a + "/");
    this.token = token;
    HttpClient.Builder b = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5));
    if (trust != null && a.startsWith("https://")) {
      b.sslContext(trusting(trust));
    }
    this.http = b.build();
  }

  /** A TLS context that trusts exactly the certificates in {@code pem}. */
  static javax.net.ssl.SSLContext trusting(java.nio.file.Path pem) {
    try (java.io.InputStream in = java.nio.file.Files.newInputStream(pem)) {
      java.security.KeyStore store = java.security.KeyStore.getInstance("PKCS12");
      store.load(null, null);
      int i = 0;
      for (java.security.cert.Certificate c : java.security.cert.CertificateFactory.getInstance("X.509")
          .generateCertificates(in)) {
        store.setCertificateEntry("cert-" + i++, c);
      }
      if (i == 0) {
        throw new CliException(pem + " holds no PEM certificate");
      }
      javax.net.ssl.TrustManagerFactory tmf =
          javax.net.ssl.TrustManagerFactory.getInstance(javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(store);
      javax.net.ssl.SSLContext ctx = javax.net.ssl.SSLContext.getInstance("TLS");
      ctx.init(null, tmf.getTrustManagers(), null);
      return ctx;
    } catch (IOException | java.security.GeneralSecurityException e) {
      throw new CliException("cannot read the certificates to trust from " + pem + ": " + e.getMessage());
    }
  }

  JsonNode get(String path) {
    return send(builder(path).GET());
  }

  JsonNode delete(String path) {
    return send(builder(path).DELETE());
  }

  JsonNode postYaml(String path, String yaml) {
    return send(builder(path).header("Content-Type", "application/yaml")
        .POST(HttpRequest.BodyPublishers.ofString(yaml, StandardCharsets.UTF_8)));
  }

  JsonNode post(String path) {
    return send(builder(path).POST(HttpRequest.BodyPublishers.noBody()));
  }

  /**
   * GETs a text answer as a stream (e.g. a followed log), with no read timeout when {@code timeout} is null; an
   * error status fails as {@link #get} does. The caller closes the stream.
   */
  java.io.InputStream stream(String path, Duration timeout) {
    HttpRequest.Builder b = builder(path, timeout).GET();
    HttpRequest r = b.build();
    try {
      HttpResponse<java.io.InputStream> resp = http.send(r, HttpResponse.BodyHandlers.ofInputStream());
      if (resp.statusCode() >= 400) {
        String text;
        try (java.io.InputStream body = resp.body()) {
          text = new String(body.readNBytes(64 * 1024), StandardCharsets.UTF_8);
        }
        JsonNode body = text.isEmpty() ? JSON.createObjectNode() : parse(text);
        throw new CliException(resp.statusCode() + " from " + r.uri() + ": "
            + (body.has("error") ? body.get("error").asText() : text), body);
      }
      return resp.body();
    } catch (IOException e) {
      throw failed(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CliException("interrupted");
    }
  }

  static String query(String key, String value) {
    return key + "=" + URLEncoder.encode(value, StandardCharsets.UTF_8);
  }

  private HttpRequest.Builder builder(String path) {
    return builder(path, Duration.ofMinutes(5));
  }

  private HttpRequest.Builder builder(String path, Duration timeout) {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path));
    if (timeout != null) {
      b.timeout(timeout);
    }
    if (token != null && !token.isEmpty()) {
      b.header("Authorization", "Bearer " + token);
    }
    return b;
  }

  private JsonNode send(HttpRequest.Builder request) {
    HttpRequest r = request.build();
    try {
      HttpResponse<String> resp = http.send(r, HttpResponse.BodyHandlers.ofString());
      JsonNode body = resp.body().isEmpty() ? JSON.createObjectNode() : parse(resp.body());
      if (resp.statusCode() >= 400) {
        String msg = body.has("error") ? body.get("error").asText() : resp.body();
        throw new CliException(resp.statusCode() + " from " + r.uri() + ": " + msg, body);
      }
      return body;
    } catch (IOException e) {
      throw failed(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CliException("interrupted");
    }
  }

  /** What the user reads when the node cannot be reached or spoken to. */
  private CliException failed(IOException e) {
    if (e instanceof ConnectException) {
      return new CliException("no Kiln node answers at " + base + " (start one with ./kiln up or ./kiln start --head)");
    }
    if (e instanceof javax.net.ssl.SSLHandshakeException) {
      return new CliException("the TLS handshake with " + base + " failed (" + e.getMessage()
          + "); pass the node's CA certificate with --cacert FILE or $KILN_CACERT");
    }
    return new CliException("talking to " + base + " failed: " + e.getMessage());
  }

  private static JsonNode parse(String text) {
    try {
      return JSON.readTree(text);
    } catch (IOException e) {
      return JSON.createObjectNode().put("error", text);
    }
  }
}
