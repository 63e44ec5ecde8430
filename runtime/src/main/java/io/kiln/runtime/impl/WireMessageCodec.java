package io.kiln.runtime.impl;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import io.kiln.runtime.WireCodec;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.MessageCodec;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * Base of Kiln's event-bus codecs: on one node a message is passed by reference ({@link #transform});
 * across nodes it is written as a length-prefixed CBOR document by {@link #encode} and read back by
 * {@link #decode}. The length is checked against {@link WireCodec#MAX_MESSAGE_BYTES} before any allocation.
 */
abstract class WireMessageCodec<T> implements MessageCodec<T, T> {

  private final String name;

  WireMessageCodec(String name) {
    this.name = name;
  }

  abstract void encode(JsonGenerator gen, T message) throws IOException;

  abstract T decode(JsonParser parser) throws IOException;

  @Override
  public final void encodeToWire(Buffer buffer, T message) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    try (JsonGenerator gen = WireCodec.cbor().getFactory().createGenerator(out)) {
      encode(gen, message);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot encode " + name + " message", e);
    }
    buffer.appendInt(out.size()).appendBytes(out.toByteArray());
  }

  @Override
  public final T decodeFromWire(int pos, Buffer buffer) {
    int length = buffer.getInt(pos);
    if (length < 0 || length > WireCodec.MAX_MESSAGE_BYTES || pos + 4 + length > buffer.length()) {
      throw new IllegalArgumentException(name + " message claims " + length + " bytes");
    }
    byte[] bytes = buffer.getBytes(pos + 4, pos + 4 + length);
    try (JsonParser parser = WireCodec.cbor().getFactory().createParser(bytes)) {
      return decode(parser);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot decode " + name + " message", e);
    }
  }

  @Override
  public final T transform(T message) {
    return message;
  }

  @Override
  public final String name() {
    return name;
  }

  @Override
  public final byte systemCodecID() {
    return -1;
  }

  static String nextString(JsonParser p) throws IOException {
    p.nextToken();
    return p.getValueAsString();
  }

  static int nextInt(JsonParser p) throws IOException {
    p.nextToken();
    return p.getIntValue();
  }

  static long nextLong(JsonParser p) throws IOException {
    p.nextToken();
    return p.getLongValue();
  }

  static boolean nextBoolean(JsonParser p) throws IOException {
    p.nextToken();
    return p.getBooleanValue();
  }
}
