package io.kiln.pools.trace;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class TraceParentTest {

  private static final String VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  @Test
  void aValidHeaderParts() {
    TraceParent t = TraceParent.parse(VALID);
    assertThat(t.traceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
    assertThat(t.parentId()).isEqualTo("00f067aa0ba902b7");
    assertThat(t.sampled()).isTrue();
    assertThat(TraceParent.parse(VALID.replace("-01", "-00")).sampled()).isFalse();
    assertThat(TraceParent.parse("  " + VALID + " ")).isEqualTo(t);
  }

  @Test
  void malformedHeadersAreIgnored() {
    for (String bad : new String[] {null, "", "garbage", VALID.toUpperCase(), VALID + "-extra",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x", "x".repeat(10_000)}) {
      assertThat(TraceParent.parse(bad)).as(String.valueOf(bad)).isNull();
    }
  }

  @Test
  void aLaterVersionIsReadAsVersionZero() {
    assertThat(TraceParent.parse("01" + VALID.substring(2) + "-more").value()).isEqualTo("01" + VALID.substring(2));
    assertThat(TraceParent.parse("01" + VALID.substring(2) + "more")).isNull();
  }
}
