package io.kiln.deploy.logging;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class LogLinesTest {

  @Test
  void tailAndAfterReadInOrderAndFollowOn() {
    LogLines l = new LogLines();
    l.addAll("a\nb\r\nc\n");
    assertThat(l.tail(2).lines()).containsExactly("b", "c");
    LogLines.Chunk all = l.tail(100);
    assertThat(all.lines()).containsExactly("a", "b", "c");
    assertThat(l.after(all.next(), 10).lines()).isEmpty();
    l.add("d");
    LogLines.Chunk next = l.after(all.next(), 10);
    assertThat(next.lines()).containsExactly("d");
    assertThat(next.skipped()).isZero();
    assertThat(l.after(next.next(), 10).lines()).isEmpty();
  }

  @Test
  void itIsBoundedAndSaysWhatAReaderMissed() {
    LogLines l = new LogLines();
    for (int i = 0; i < LogLines.MAX_LINES + 10; i++) {
      l.add("line " + i);
    }
    LogLines.Chunk fromStart = l.after(0, 5);
    assertThat(fromStart.skipped()).isEqualTo(10);
    assertThat(fromStart.lines()).first().isEqualTo("line 10");
    assertThat(l.tail(LogLines.MAX_LINES + 10).lines()).hasSize(LogLines.MAX_LINES);
    assertThat(l.tail(1_000).lines()).last().isEqualTo("line " + (LogLines.MAX_LINES + 9));
  }

  @Test
  void aReadIsBoundedInCharactersToo() {
    LogLines l = new LogLines();
    for (int i = 0; i < 100; i++) {
      l.add("x".repeat(99));
    }
    assertThat(l.after(-1, 100, 1_000).lines()).hasSize(10);
    LogLines.Chunk first = l.after(0, 100, 1_000);
    assertThat(first.lines()).hasSize(10);
    assertThat(l.after(first.next(), 100, 1_000).lines()).hasSize(10); // and the rest follows
    l.add("y".repeat(LogLines.MAX_LINE * 2));
    assertThat(l.tail(1).lines().get(0)).hasSizeLessThan(LogLines.MAX_LINE + 20).endsWith("(cut)");
  }
}
