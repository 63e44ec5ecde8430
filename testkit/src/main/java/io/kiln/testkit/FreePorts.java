package io.kiln.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;

/**
 * Free TCP ports on the loopback address for a process a test starts. Ports asked for together are distinct: every
 * socket stays bound until all are picked, so the kernel cannot hand the same ephemeral port out twice (two calls of
 * a bind-read-close helper in a row can, and did: {@code httpPort and grpcPort must differ, both are 46245}).
 */
public final class FreePorts {

  private FreePorts() {
  }

  /** One free port. */
  public static int one() {
    return distinct(1)[0];
  }

  /** {@code count} distinct free ports. */
  public static int[] distinct(int count) {
    List<ServerSocket> held = new ArrayList<>(count);
    try {
      int[] ports = new int[count];
      for (int i = 0; i < count; i++) {
        ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        held.add(s);
        ports[i] = s.getLocalPort();
      }
      return ports;
    } catch (IOException e) {
      throw new UncheckedIOException("no free loopback port", e);
    } finally {
      for (ServerSocket s : held) {
        try {
          s.close();
        } catch (IOException ignored) {
          // the port is still free for the caller; nothing to undo
        }
      }
    }
  }
}
