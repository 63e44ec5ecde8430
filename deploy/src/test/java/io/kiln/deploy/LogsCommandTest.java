package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kiln logs --lines N} of a file: where its last N lines begin, read backwards across blocks. */
class LogsCommandTest {

  @TempDir
  Path dir;

  private String tail(String content, int n) throws Exception {
    Path f = dir.resolve("n.log");
    Files.writeString(f, content);
    try (RandomAccessFile r = new RandomAccessFile(f.toFile(), "r")) {
      long from = LogsCommand.tailStart(r, r.length(), n);
      byte[] all = Files.readAllBytes(f);
      return new String(all, (int) from, all.length - (int) from, StandardCharsets.UTF_8);
    }
  }

  @Test
  void theLastLinesOfAFile() throws Exception {
    assertThat(tail("a\nb\nc\n", 2)).isEqualTo("b\nc\n");
    assertThat(tail("a\nb\nc", 2)).isEqualTo("b\nc");
    assertThat(tail("a\nb\nc\n", 10)).isEqualTo("a\nb\nc\n");
    assertThat(tail("", 3)).isEmpty();
    assertThat(tail("only\n", 1)).isEqualTo("only\n");
  }

  @Test
  void acrossBlocks() throws Exception {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < 20_000; i++) {
      b.append("line ").append(i).append(" ").append("x".repeat(i % 50)).append('\n');
    }
    String t = tail(b.toString(), 5_000);
    assertThat(t.lines().count()).isEqualTo(5_000);
    assertThat(t).startsWith("line 15000 ").endsWith("line 19999 " + "x".repeat(19_999 % 50) + "\n");
  }
}
