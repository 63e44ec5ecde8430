package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.kiln.loadtest.impl.WrkOutput;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** WrkOutput against output recorded from wrk 4.1 ({@code src/test/resources/wrk/}). */
class WrkOutputTest {

  static String recorded(String name) throws IOException {
    try (InputStream in = WrkOutputTest.class.getResourceAsStream("/wrk/" + name)) {
      if (in == null) {
        throw new IOException("no test resource /wrk/" + name);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void readsThroughputTotalsAndTheLatencyDistributionInMilliseconds() throws IOException {
    WrkOutput w = WrkOutput.parse(recorded("bare-json-c16.txt"));

    assertThat(w.requestsPerSecond()).isEqualTo(59776.75);
    assertThat(w.requests()).isEqualTo(125494);
    assertThat(w.seconds()).isCloseTo(2.10, within(1e-9));
    assertThat(w.p(50)).isCloseTo(0.238, within(1e-9));
    assertThat(w.p(75)).isCloseTo(0.296, within(1e-9));
    assertThat(w.p(90)).isCloseTo(0.378, within(1e-9));
    assertThat(w.p(99)).isCloseTo(3.14, within(1e-9));
    assertThat(w.errors()).isZero();
  }

  @Test
  void mixedUnitsAreAllConverted() throws IOException {
    WrkOutput w = WrkOutput.parse(recorded("binary-c64.txt"));

    assertThat(w.p(50)).isCloseTo(0.719, within(1e-9));
    assertThat(w.p(90)).isCloseTo(1.01, within(1e-9));
    assertThat(w.p(99)).isCloseTo(6.61, within(1e-9));
    assertThat(w.seconds()).isCloseTo(1.0, within(1e-9));
  }

  @Test
  void countsNon2xxResponsesAndSocketErrorsAsErrors() throws IOException {
    WrkOutput bad = WrkOutput.parse(recorded("non2xx.txt"));
    // wrk prints this line (format "Socket errors: connect %d, read %d, write %d, timeout %d") only when one is non-zero.
    WrkOutput socket = WrkOutput.parse(recorded("bare-json-c16.txt")
        .replace("Requests/sec:", "  Socket errors: connect 0, read 2, write 1, timeout 4\nRequests/sec:"));

    assertThat(bad.non2xx()).isEqualTo(48911);
    assertThat(bad.errors()).isEqualTo(bad.requests());
    assertThat(socket.socketErrors()).isEqualTo(7);
  }

  @Test
  void refusesOutputOfAFailedRunOrWithoutLatency() throws IOException {
    assertThatThrownBy(() -> WrkOutput.parse("unable to connect to 127.0.0.1:18090 Connection refused\n"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not the output of a completed wrk run").hasMessageContaining("unable to connect");
    String noLatency = recorded("bare-json-c16.txt").replaceAll("(?m)^\\s+\\d+%.*\\n", "");
    assertThatThrownBy(() -> WrkOutput.parse(noLatency)).hasMessageContaining("--latency");
  }
}
