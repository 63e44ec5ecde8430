package io.kiln.loadtest.impl;

import io.vertx.core.buffer.Buffer;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

/**
 * Incremental Server-Sent Events parser: feed the body's buffers as they arrive, however they split lines and events,
 * and it hands each event's {@code data} (its {@code data:} lines joined with {@code \n}) to the consumer when the
 * blank line ending the event arrives. Lines end with {@code \n}, {@code \r\n} or {@code \r}; comments and other
 * fields ({@code event:}, {@code id:}, {@code retry:}) are skipped; an event without data is not delivered; a partial
 * event at the end of the body is dropped, as the SSE specification says. Not thread-safe: one per response.
 */
public final class SseParser {
  /** Longest line kept (a larger one is a broken server, not an answer to measure). */
  public static final int MAX_LINE_BYTES = 16 << 20;

  private final Consumer<String> onData;
  private final ByteArrayOutputStream line = new ByteArrayOutputStream(256);
  private StringBuilder data;
  private boolean afterCr;

  public SseParser(Consumer<String> onData) {
    this.onData = onData;
  }

  public void feed(Buffer buffer) {
    feed(buffer.getBytes());
  }

  public void feed(byte[] bytes) {
    int start = 0;
    for (int i = 0; i < bytes.length; i++) {
      byte b = bytes[i];
      if (b != '\n' && b != '\r') {
        continue;
      }
      boolean crlf = b == '\n' && afterCr && i == start && line.size() == 0;
      afterCr = b == '\r';
      if (crlf) { // the \n of a \r\n whose \r ended the line already
        start = i + 1;
        continue;
      }
      append(bytes, start, i - start);
      endLine();
      start = i + 1;
    }
    if (start < bytes.length) {
      afterCr = false;
      append(bytes, start, bytes.length - start);
    }
  }

  private void append(byte[] bytes, int from, int len) {
    if (line.size() + len > MAX_LINE_BYTES) {
      throw new IllegalStateException("an event-stream line is longer than " + MAX_LINE_BYTES + " bytes");
    }
    line.write(bytes, from, len);
  }

  // UTF-8 never has CR or LF inside a multi-byte character, so splitting on those bytes is safe.
  private void endLine() {
    String s = line.toString(StandardCharsets.UTF_8);
    line.reset();
    if (s.isEmpty()) {
      if (data != null) {
        String d = data.toString();
        data = null;
        onData.accept(d);
      }
      return;
    }
    if (s.startsWith(":")) {
      return;
    }
    int colon = s.indexOf(':');
    String field = colon < 0 ? s : s.substring(0, colon);
    if (!field.equals("data")) {
      return;
    }
    String value = colon < 0 ? "" : s.substring(colon + 1);
    if (value.startsWith(" ")) {
      value = value.substring(1);
    }
    if (data == null) {
      data = new StringBuilder(value);
    } else {
      data.append('\n').append(value);
    }
  }
}
