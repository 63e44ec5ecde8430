package io.kiln.runtime;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Mutual TLS on the clustered event bus, which carries every remote actor call: each member presents
 * {@code certChain} and accepts a connection only from a peer whose certificate {@code trustedCa} signed, so
 * a process without the cluster's certificate can neither send nor receive actor messages. (Membership itself
 * is Hazelcast's, whose open-source edition has no TLS or member authentication: see docs/security.md.)
 *
 * @param certChain this member's PEM certificate chain (its own first)
 * @param privateKey its PEM private key
 * @param trustedCa the PEM certificate(s) of the authority that signs the cluster's members
 */
public record BusTls(Path certChain, Path privateKey, Path trustedCa) {

  public BusTls {
    Objects.requireNonNull(certChain, "certChain");
    Objects.requireNonNull(privateKey, "privateKey");
    Objects.requireNonNull(trustedCa, "trustedCa");
    for (Path p : new Path[] {certChain, privateKey, trustedCa}) {
      if (!Files.isReadable(p)) {
        throw new IllegalArgumentException("cannot read " + p);
      }
    }
  }
}
