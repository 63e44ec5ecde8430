package io.kiln.runtime;

/**
 * A placement group cannot be used as asked: its name is taken, it failed or was removed before it was
 * ready. The message names the group.
 */
public class PlacementGroupException extends KilnException {

  public PlacementGroupException(String message) {
    super(message);
  }
}
