package io.kiln.runtime.impl;

import io.kiln.runtime.KilnException;

/** A node agent refused a placement because its ledger no longer fits the request; try the next node. */
final class PlacementRefusedException extends KilnException {

  PlacementRefusedException(String message) {
    super(message);
  }
}
