package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The parts of {@link NetNamespaces} that need no namespaces (MultiHostIT runs the rest). */
class NetNamespacesTest {

  @Test
  void readsTheKernelsSocketAddresses() {
    assertThat(NetNamespaces.socketAddress("0B0DD50A:1F40")).isEqualTo("10.213.13.11:8000");
    assertThat(NetNamespaces.socketAddress("0100007F:1F41")).isEqualTo("127.0.0.1:8001");
    assertThat(NetNamespaces.socketAddress("00000000:1651")).isEqualTo("0.0.0.0:5713");
    // tcp6 shows an IPv4 bind of a dual-stack socket as ::ffff:a.b.c.d
    assertThat(NetNamespaces.socketAddress("0000000000000000FFFF00000100007F:1F41")).isEqualTo("127.0.0.1:8001");
    assertThat(NetNamespaces.socketAddress("00000000000000000000000001000000:1F40")).isEqualTo("[0:0:0:0:0:0:0:1]:8000");
    assertThat(NetNamespaces.socketAddress("00000000000000000000000000000000:0016")).isEqualTo("[0:0:0:0:0:0:0:0]:22");
  }
}
