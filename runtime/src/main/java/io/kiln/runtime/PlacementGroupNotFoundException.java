package io.kiln.runtime;

/** No placement group exists under the id or name asked for (it may have been removed). */
public class PlacementGroupNotFoundException extends PlacementGroupException {

  public PlacementGroupNotFoundException(String message) {
    super(message);
  }
}
