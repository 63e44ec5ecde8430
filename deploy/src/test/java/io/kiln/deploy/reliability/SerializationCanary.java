package io.kiln.deploy.reliability;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.ObjectInputStream;

/** Not Kiln code: what the serialization scan must catch, so the scan is known to work. */
final class SerializationCanary {

  private SerializationCanary() {
  }

  static Object read(byte[] bytes) throws IOException, ClassNotFoundException {
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes))) {
      return in.readObject();
    }
  }
}
