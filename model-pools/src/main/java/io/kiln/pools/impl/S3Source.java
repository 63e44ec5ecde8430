package io.kiln.pools.impl;

import io.kiln.pools.ModelLoadException;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * {@code s3://bucket/key} (one object: a one-file model folder) or {@code s3://bucket/prefix} (every object under
 * {@code prefix/}: a folder), signed with AWS Signature Version 4 over the JDK HTTP client. Path-style requests to
 * {@code AWS_ENDPOINT_URL} when set (S3-compatible servers), virtual-hosted ones to AWS otherwise.
 */
public final class S3Source {

  private static final String EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  private static final DateTimeFormatter AMZ_DATE = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'")
      .withZone(ZoneOffset.UTC);
  private static final int MAX_OBJECTS = 10_000;

  /**
   * @param endpoint the S3-compatible server ({@code AWS_ENDPOINT_URL}), null for AWS itself
   */
  public record Credentials(String accessKeyId, String secretAccessKey, String region, URI endpoint) {
    public Credentials {
      region = region == null || region.isBlank() ? "us-east-1" : region;
      if (endpoint != null && !"https".equalsIgnoreCase(endpoint.getScheme())
          && !("http".equalsIgnoreCase(endpoint.getScheme()) && endpoint.getHost() != null
              && io.kiln.pools.ModelUris.isLoopback(endpoint.getHost()))) {
        throw new IllegalArgumentException("AWS_ENDPOINT_URL: must be https:// (http:// only to a loopback host), got "
            + endpoint);
      }
    }

    /** No credentials: an s3:// load fails saying which variables to set. */
    public static final Credentials NONE = new Credentials(null, null, null, null);

    @Override
    public String toString() {
      return "Credentials[" + accessKeyId + ", region " + region + ", endpoint " + endpoint + "]"; // no secret in logs
    }

    /** System properties ({@code aws.accessKeyId}, …, as the AWS SDKs name them) over the AWS_* environment. */
    public static Credentials fromEnvironment() {
      String endpoint = setting("aws.endpointUrl", "AWS_ENDPOINT_URL");
      return new Credentials(setting("aws.accessKeyId", "AWS_ACCESS_KEY_ID"),
          setting("aws.secretAccessKey", "AWS_SECRET_ACCESS_KEY"),
          setting("aws.region", "AWS_REGION"), endpoint == null ? null : URI.create(endpoint));
    }

    private static String setting(String property, String env) {
      String v = System.getProperty(property);
      v = v == null || v.isBlank() ? System.getenv(env) : v;
      return v == null || v.isBlank() ? null : v.trim();
    }
  }

  private final HttpsSource http;
  private final Credentials credentials;
  private final Clock clock;

  S3Source(HttpsSource http, Credentials credentials, Clock clock) {
    this.http = http;
    this.credentials = credentials;
    this.clock = clock;
  }

  /** Downloads the object or prefix {@code uri} names into the empty folder {@code into}. */
  void download(URI uri, String sha256, Path into) throws IOException {
    if (credentials.accessKeyId() == null || credentials.secretAccessKey() == null) {
      throw new ModelLoadException("model " + uri + ": s3:// needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
    }
    String bucket = uri.getHost();
    String key = uri.getPath().replaceAll("^/+", "").replaceAll("/+$", "");
    HttpResponse<InputStream> object = http.send(uri, signed(objectUri(bucket, key, Map.of())));
    if (object.statusCode() == 200) {
      try (InputStream body = object.body()) {
        String actual = http.copy(uri, body, into.resolve(ModelCache.fileName(uri)),
            object.headers().firstValueAsLong("content-length").orElse(-1));
        if (!sha256.isEmpty() && !actual.equals(sha256)) {
          throw new ModelLoadException("model " + uri + ": sha256 mismatch: expected " + sha256 + ", got " + actual);
        }
      }
      return;
    }
    String why = drain(object);
    if (object.statusCode() != 404) {
      throw failure(uri, object.statusCode(), why);
    }
    if (!sha256.isEmpty()) {
      throw new ModelLoadException("model " + uri + ": no object " + key + " in bucket " + bucket
          + ", and sha256 applies to a single object, not a prefix");
    }
    String prefix = key + "/";
    List<String> keys = list(uri, bucket, prefix);
    if (keys.isEmpty()) {
      throw new ModelLoadException("model " + uri + ": bucket " + bucket + " has no object " + key
          + " and nothing under " + prefix);
    }
    for (String k : keys) {
      Path target = ModelArchives.inside(into, k.substring(prefix.length()), uri.toString());
      java.nio.file.Files.createDirectories(target.getParent());
      HttpResponse<InputStream> r = http.send(uri, signed(objectUri(bucket, k, Map.of())));
      if (r.statusCode() != 200) {
        throw failure(uri, r.statusCode(), drain(r) + " (object " + k + ")");
      }
      try (InputStream body = r.body()) {
        http.copy(URI.create("s3://" + bucket + "/" + encode(k, false)), body, target,
            r.headers().firstValueAsLong("content-length").orElse(-1));
      }
    }
  }

  private List<String> list(URI uri, String bucket, String prefix) {
    List<String> keys = new ArrayList<>();
    String token = null;
    do {
      Map<String, String> query = new TreeMap<>();
      query.put("list-type", "2");
      query.put("prefix", prefix);
      if (token != null) {
        query.put("continuation-token", token);
      }
      HttpResponse<InputStream> r = http.send(uri, signed(objectUri(bucket, "", query)));
      String body = drain(r);
      if (r.statusCode() != 200) {
        throw failure(uri, r.statusCode(), body);
      }
      Document doc = parse(uri, body);
      NodeList contents = doc.getElementsByTagName("Contents");
      for (int i = 0; i < contents.getLength(); i++) {
        String k = text((Element) contents.item(i), "Key");
        if (k != null && !k.endsWith("/")) {
          keys.add(k);
        }
      }
      if (keys.size() > MAX_OBJECTS) {
        throw new ModelLoadException("model " + uri + ": more than " + MAX_OBJECTS + " objects under " + prefix);
      }
      boolean truncated = "true".equals(text(doc.getDocumentElement(), "IsTruncated"));
      token = truncated ? text(doc.getDocumentElement(), "NextContinuationToken") : null;
    } while (token != null);
    return keys;
  }

  private URI objectUri(String bucket, String key, Map<String, String> query) {
    StringBuilder q = new StringBuilder();
    for (var e : new TreeMap<>(query).entrySet()) {
      q.append(q.length() == 0 ? "" : "&").append(encode(e.getKey(), true)).append('=')
          .append(encode(e.getValue(), true));
    }
    String path = encode(key, false);
    String base;
    if (credentials.endpoint() != null) {
      String e = credentials.endpoint().toString().replaceAll("/+$", "");
      base = e + "/" + encode(bucket, true) + "/" + path;
    } else {
      base = "https://" + bucket + ".s3." + credentials.region() + ".amazonaws.com/" + path;
    }
    return URI.create(q.length() == 0 ? base : base + "?" + q);
  }

  /** A GET of {@code target} with SigV4 headers (unsigned payload: a GET has none). */
  HttpRequest signed(URI target) {
    String amzDate = AMZ_DATE.format(clock.instant());
    String date = amzDate.substring(0, 8);
    String host = target.getHost() + (target.getPort() == -1 ? "" : ":" + target.getPort());
    String canonicalHeaders = "host:" + host + "\n" + "x-amz-content-sha256:" + EMPTY_SHA256 + "\n"
        + "x-amz-date:" + amzDate + "\n";
    String signedHeaders = "host;x-amz-content-sha256;x-amz-date";
    String canonical = "GET\n" + target.getRawPath() + "\n" + (target.getRawQuery() == null ? "" : target.getRawQuery())
        + "\n" + canonicalHeaders + "\n" + signedHeaders + "\n" + EMPTY_SHA256;
    String scope = date + "/" + credentials.region() + "/s3/aws4_request";
    String toSign = "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex(sha256(canonical));
    byte[] k = hmac(("AWS4" + credentials.secretAccessKey()).getBytes(StandardCharsets.UTF_8), date);
    k = hmac(k, credentials.region());
    k = hmac(k, "s3");
    k = hmac(k, "aws4_request");
    String signature = hex(hmac(k, toSign));
    return HttpRequest.newBuilder(target).GET()
        .header("x-amz-date", amzDate)
        .header("x-amz-content-sha256", EMPTY_SHA256)
        .header("Authorization", "AWS4-HMAC-SHA256 Credential=" + credentials.accessKeyId() + "/" + scope
            + ", SignedHeaders=" + signedHeaders + ", Signature=" + signature)
        .build();
  }

  /** RFC 3986 percent-encoding as SigV4 wants it: unreserved characters kept, '/' kept in paths. */
  static String encode(String s, boolean slash) {
    String e = URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20").replace("*", "%2A")
        .replace("%7E", "~");
    return slash ? e : e.replace("%2F", "/");
  }

  private static ModelLoadException failure(URI uri, int status, String body) {
    String code = body == null ? "" : body.replaceAll("(?s).*<Code>([^<]*)</Code>.*", "$1");
    code = code.equals(body) ? "" : " (" + code + ")";
    String hint = status == 403 || status == 401
        ? ": check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION" : "";
    return new ModelLoadException("model " + uri + ": S3 answered HTTP " + status + code + hint);
  }

  private static String drain(HttpResponse<InputStream> r) {
    try (InputStream in = r.body()) {
      return new String(in.readNBytes(1 << 20), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "";
    }
  }

  private static Document parse(URI uri, String xml) {
    try {
      DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
      f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
      f.setExpandEntityReferences(false);
      return f.newDocumentBuilder().parse(new java.io.ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8)));
    } catch (Exception e) {
      throw new ModelLoadException("model " + uri + ": S3 sent a listing that is not XML: " + e.getMessage(), e);
    }
  }

  private static String text(Element parent, String tag) {
    NodeList n = parent.getElementsByTagName(tag);
    return n.getLength() == 0 ? null : n.item(0).getTextContent();
  }

  private static byte[] sha256(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  private static byte[] hmac(byte[] key, String data) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String hex(byte[] b) {
    return HexFormat.of().formatHex(b);
  }

}
