package io.kiln.gateway;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;

/**
 * A certificate chain and its private key as PEM files (what a Kubernetes TLS Secret mounts as
 * {@code tls.crt} and {@code tls.key}). The gateway reads them at start and again whenever their content
 * changes, so a renewed certificate is served without a restart.
 *
 * @param certChain PEM certificates, the server's first, then its intermediates
 * @param privateKey the PEM private key of the first certificate (PKCS#8 or PKCS#1)
 * @param reloadPeriod how often the files are read to see whether they changed
 */
public record TlsFiles(Path certChain, Path privateKey, java.time.Duration reloadPeriod) {

  /** Neither file may be larger than this: a PEM chain of a few certificates is a few kB. */
  public static final long MAX_FILE_BYTES = 1L << 20;
  public static final java.time.Duration DEFAULT_RELOAD_PERIOD = java.time.Duration.ofSeconds(10);

  public TlsFiles {
    Objects.requireNonNull(certChain, "certChain");
    Objects.requireNonNull(privateKey, "privateKey");
    if (reloadPeriod == null || reloadPeriod.toMillis() < 10) {
      throw new IllegalArgumentException("reloadPeriod must be at least 10 ms, got " + reloadPeriod);
    }
  }

  public TlsFiles(Path certChain, Path privateKey) {
    this(certChain, privateKey, DEFAULT_RELOAD_PERIOD);
  }

  /** The two files' contents now; fails naming the file that is missing, too large or not PEM. */
  public Pem read() {
    return new Pem(readPem(certChain, "CERTIFICATE"), readPem(privateKey, "PRIVATE KEY"));
  }

  private static String readPem(Path file, String kind) {
    try {
      long size = Files.size(file);
      if (size > MAX_FILE_BYTES) {
        throw new IllegalArgumentException(file + " is " + size + " bytes; a PEM file may hold at most " + MAX_FILE_BYTES);
      }
      String text = Files.readString(file, StandardCharsets.US_ASCII);
      if (!text.contains("-----BEGIN ") || !text.contains(kind + "-----")) {
        throw new IllegalArgumentException(file + " holds no PEM " + kind.toLowerCase(java.util.Locale.ROOT)
            + " (expected a '-----BEGIN ..." + kind + "-----' block)");
      }
      return text;
    } catch (java.nio.charset.MalformedInputException e) {
      throw new IllegalArgumentException(file + " is not a PEM text file");
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read " + file + ": " + e, e);
    }
  }

  /** What the files held when read. */
  public record Pem(String certChain, String privateKey) {
  }
}
