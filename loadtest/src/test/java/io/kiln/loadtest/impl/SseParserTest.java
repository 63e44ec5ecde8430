package io.kiln.loadtest.impl;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class SseParserTest {

  private static final String STREAM = "data: {\"choices\":[{\"text\":\"héllo\"}]}\n\n"
      + ": a comment\n"
      + "event: message\nid: 7\ndata: {\"choices\":[{\"text\":\" world\"}]}\n\n"
      + "data: first line\ndata:second line\n\n"
      + "id: 8\n\n" // no data: not delivered
      + "data: [DONE]\n\n";

  private static final List<String> EVENTS = List.of("{\"choices\":[{\"text\":\"héllo\"}]}",
      "{\"choices\":[{\"text\":\" world\"}]}", "first line\nsecond line", "[DONE]");

  private static List<String> parse(byte[]... pieces) {
    List<String> events = new ArrayList<>();
    SseParser p = new SseParser(events::add);
    for (byte[] piece : pieces) {
      p.feed(piece);
    }
    return events;
  }

  @Test
  void eventsSplitAtAnyByteAreTheSame() {
    for (String eol : new String[] {"\n", "\r\n", "\r"}) {
      byte[] all = STREAM.replace("\n", eol).getBytes(StandardCharsets.UTF_8);
      assertThat(parse(all)).as("whole, eol %s", eol.replace("\r", "CR").replace("\n", "LF")).isEqualTo(EVENTS);
      for (int cut = 0; cut <= all.length; cut++) { // every split point, the multi-byte é and a CR|LF among them
        assertThat(parse(Arrays.copyOfRange(all, 0, cut), Arrays.copyOfRange(all, cut, all.length)))
            .as("cut at %d, eol %s", cut, eol.replace("\r", "CR").replace("\n", "LF")).isEqualTo(EVENTS);
      }
      byte[][] bytes = new byte[all.length][];
      for (int i = 0; i < all.length; i++) {
        bytes[i] = new byte[] {all[i]};
      }
      assertThat(parse(bytes)).isEqualTo(EVENTS);
    }
  }

  @Test
  void anEventIsDeliveredOnlyWhenItsBlankLineArrives() {
    List<String> events = new ArrayList<>();
    SseParser p = new SseParser(events::add);
    p.feed("data: [DONE]\n".getBytes(StandardCharsets.UTF_8));
    assertThat(events).isEmpty();
    p.feed("\n".getBytes(StandardCharsets.UTF_8));
    assertThat(events).containsExactly("[DONE]");
    p.feed("data: cut off".getBytes(StandardCharsets.UTF_8)); // the body ends here: dropped
    assertThat(events).containsExactly("[DONE]");
  }
}
