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

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private final URI base;
  private final String token;

  ManagementClient(String address, String token) {
    String a = address.startsWith("http://") || address.startsWith("https://") ? address : "http://" + address;
    this.base = URI.create(a.endsWith("/") ? a : a + "/");
    this.token = token;
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

  static String query(String key, String value) {
    return key + "=" + URLEncoder.encode(value, StandardCharsets.UTF_8);
  }

  private HttpRequest.Builder builder(String path) {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofMinutes(5));
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
    } catch (ConnectException e) {
      throw new CliException("no Kiln node answers at " + base + " (start one with ./kiln up or ./kiln start --head)");
    } catch (IOException e) {
      throw new CliException("talking to " + base + " failed: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CliException("interrupted");
    }
  }

  private static JsonNode parse(String text) {
    try {
      return JSON.readTree(text);
    } catch (IOException e) {
      return JSON.createObjectNode().put("error", text);
    }
  }
}
