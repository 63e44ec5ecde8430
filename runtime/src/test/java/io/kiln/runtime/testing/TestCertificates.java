package io.kiln.runtime.testing;

import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Date;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * Real X.509 certificates for TLS tests, made in-process: a certificate authority, and leaf certificates it
 * signs for 127.0.0.1 / localhost (server and client use), written as the PEM files a user hands Kiln
 * ({@code ca.pem}; {@code NAME.crt} = leaf + CA; {@code NAME.key} = PKCS#8).
 */
public final class TestCertificates {

  private static final AtomicLong SERIAL = new AtomicLong(System.nanoTime());
  private final Path dir;
  private final KeyPair caKeys;
  private final X509Certificate ca;

  private TestCertificates(Path dir, KeyPair caKeys, X509Certificate ca) {
    this.dir = dir;
    this.caKeys = caKeys;
    this.ca = ca;
  }

  /** A new certificate authority {@code cn}, its certificate written to {@code dir/ca.pem}. */
  public static TestCertificates authority(Path dir, String cn) {
    KeyPair keys = keys();
    X500Name name = new X500Name("CN=" + cn);
    try {
      X509v3CertificateBuilder b = builder(name, name, keys)
          .addExtension(Extension.basicConstraints, true, new BasicConstraints(true))
          .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
      X509Certificate cert = sign(b, keys);
      TestCertificates out = new TestCertificates(dir, keys, cert);
      Files.writeString(out.caPem(), pem("CERTIFICATE", cert.getEncoded()));
      return out;
    } catch (IOException | java.security.GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The authority's certificate (what a peer trusts). */
  public Path caPem() {
    return dir.resolve("ca.pem");
  }

  /** A leaf certificate {@code name} for 127.0.0.1 and localhost, for servers and clients alike. */
  public Leaf issue(String name) {
    KeyPair keys = keys();
    try {
      GeneralNames san = new GeneralNames(new GeneralName[] {
          new GeneralName(GeneralName.iPAddress, "127.0.0.1"), new GeneralName(GeneralName.dNSName, "localhost")});
      X509v3CertificateBuilder b = builder(X500Name.getInstance(ca.getSubjectX500Principal().getEncoded()),
          new X500Name("CN=" + name), keys)
          .addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
          .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyEncipherment))
          .addExtension(Extension.extendedKeyUsage, false,
              new ExtendedKeyUsage(new KeyPurposeId[] {KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth}))
          .addExtension(Extension.subjectAlternativeName, false, san);
      X509Certificate cert = sign(b, caKeys);
      Path chain = dir.resolve(name + ".crt");
      Path key = dir.resolve(name + ".key");
      Files.writeString(chain, pem("CERTIFICATE", cert.getEncoded()) + pem("CERTIFICATE", ca.getEncoded()));
      Files.writeString(key, pem("PRIVATE KEY", keys.getPrivate().getEncoded()));
      return new Leaf(chain, key, cert);
    } catch (IOException | java.security.GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A client context that trusts exactly this authority. */
  public SSLContext trustingContext() {
    try {
      KeyStore trust = KeyStore.getInstance("PKCS12");
      trust.load(null, null);
      trust.setCertificateEntry("ca", ca);
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

  private static X509v3CertificateBuilder builder(X500Name issuer, X500Name subject, KeyPair keys) {
    Instant now = Instant.now();
    return new JcaX509v3CertificateBuilder(issuer, BigInteger.valueOf(SERIAL.incrementAndGet()),
        Date.from(now.minus(Duration.ofHours(1))), Date.from(now.plus(Duration.ofDays(2))), subject, keys.getPublic());
  }

  private static X509Certificate sign(X509v3CertificateBuilder b, KeyPair signer) {
    try {
      return new JcaX509CertificateConverter().getCertificate(
          b.build(new JcaContentSignerBuilder("SHA256withRSA").build(signer.getPrivate())));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static KeyPair keys() {
    try {
      KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
      g.initialize(2048);
      return g.generateKeyPair();
    } catch (java.security.GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String pem(String type, byte[] der) {
    return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
        .encodeToString(der) + "\n-----END " + type + "-----\n";
  }

  /** A signed leaf: its chain file, its key file, and the certificate itself. */
  public record Leaf(Path certChain, Path privateKey, X509Certificate certificate) {
  }
}
