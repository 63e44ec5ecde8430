package io.kiln.runtime.impl;

import java.util.UUID;

/** Ids of actors and tasks: random, 16 hex characters, unique across the cluster for practical purposes. */
final class Ids {

  private Ids() {
  }

  static String newId() {
    return UUID.randomUUID().toString().replace("-", "").substring(0, 16);
  }
}
