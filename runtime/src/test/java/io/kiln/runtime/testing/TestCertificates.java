package io.kiln.runtime.testing;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * Real X.509 certificates for TLS tests, made by the JDK's own {@code keytool} (no test-only crypto library):
 * a certificate authority, and leaf certificates it signs for 127.0.0.1 / localhost, written as the PEM files
 * a user would hand Kiln ({@code ca.pem}, {@code NAME.crt} = leaf + CA, {@code NAME.key} = PKCS#8).
 */
public final class TestCertificates {

  private static final String PASS = "kiln-test";
  private final Path dir;
  private final Path caStore;

  private TestCertificates(Path dir) {
    this.dir = dir;
    this.caStore = dir.resolve("ca.p12");
  }

  /** A new certificate authority {@code cn} in {@code dir}. */
  public static TestCertificates authority(Path dir, String cn) {
    TestCertificates ca = new TestCertificates(dir);
    ca.keytool("-genkeypair", "-alias", "ca", "-keyalg", "RSA", "-keysize", "2048", "-dname", "CN=" + cn,
        "-ext", "bc:c", "-validity", "3", "-keystore", ca.caStore.toString(), "-storetype", "PKCS12");
    ca.keytool("-exportcert", "-rfc", "-alias", "ca", "-keystore", ca.caStore.toString(),
        "-file", ca.caPem().toString());
    return ca;
  }

  /** The authority's certificate (what a peer trusts). */
  public Path caPem() {
    return dir.resolve("ca.pem");
  }

  /** A leaf certificate {@code name} for 127.0.0.1 and localhost, for servers and clients alike. */
  public Leaf issue(String name) {
    Path store = dir.resolve(name + ".p12");
    Path csr = dir.resolve(name + ".csr");
    Path signed = dir.resolve(name + ".signed.pem");
    keytool("-genkeypair", "-alias", name, "-keyalg", "RSA", "-keysize", "2048", "-dname", "CN=" + name,
        "-validity", "3", "-keystore", store.toString(), "-storetype", "PKCS12");
    keytool("-certreq", "-alias", name, "-keystore", store.toString(), "-file", csr.toString());
    keytool("-gencert", "-alias", "ca", "-keystore", caStore.toString(), "-infile", csr.toString(),
        "-outfile", signed.toString(), "-rfc", "-validity", "3", "-ext", "san=ip:127.0.0.1,dns:localhost",
        "-ext", "ku:c=digitalSignature,keyEncipherment", "-ext", "eku=serverAuth,clientAuth");
    try {
      KeyStore ks = KeyStore.getInstance("PKCS12");
      try (InputStream in = Files.newInputStream(store)) {
        ks.load(in, PASS.toCharArray());
      }
      PrivateKey key = (PrivateKey) ks.getKey(name, PASS.toCharArray());
      Path cert = dir.resolve(name + ".crt");
      Path keyFile = dir.resolve(name + ".key");
      Files.writeString(cert, Files.readString(signed) + Files.readString(caPem()));
      Files.writeString(keyFile, pem("PRIVATE KEY", key.getEncoded()));
      return new Leaf(cert, keyFile, (X509Certificate) certificates(cert).get(0));
    } catch (IOException | java.security.GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A client context that trusts exactly this authority. */
  public SSLContext trustingContext() {
    try {
      KeyStore trust = KeyStore.getInstance("PKCS12");
      trust.load(null, null);
      trust.setCertificateEntry("ca", certificates(caPem()).get(0));
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(trust);
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(null, tmf.getTrustManagers(), null);
      return ctx;
    } catch (IOException | java.security.GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The certificates of a PEM file, in order. */
  public static List<X509Certificate> certificates(Path pem) {
    try (InputStream in = Files.newInputStream(pem)) {
      List<X509Certificate> out = new ArrayList<>();
      for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        out.add((X509Certificate) c);
      }
      return out;
    } catch (IOException | java.security.GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String pem(String type, byte[] der) {
    return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
        .encodeToString(der) + "\n-----END " + type + "-----\n";
  }

  private void keytool(String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
    cmd.addAll(List.of(args));
    cmd.addAll(List.of("-storepass", PASS, "-keypass", PASS, "-noprompt"));
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException("keytool " + String.join(" ", args) + " failed: " + out);
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** A signed leaf: its chain file, its key file, and the certificate itself. */
  public record Leaf(Path certChain, Path privateKey, X509Certificate certificate) {
  }
}
