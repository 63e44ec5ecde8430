package io.kiln.pools.impl;

import io.kiln.pools.InferenceException;
import io.kiln.pools.Tensor;
import io.kiln.runtime.WireCodec;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.util.List;

/**
 * One message of the stream protocol between a worker and the node that receives its chunks, as it crosses the
 * event bus: CBOR through {@link WireCodec} (tensors as raw little-endian bytes), never Java serialization.
 *
 * <p>Worker → receiver, to {@code kiln.stream.in.<receiving node>}: {@value #CHUNK} (seq 0, 1, …, outputs),
 * then exactly one of {@value #END} (seq = the chunk count) or {@value #ERROR} (kind, message). Receiver →
 * worker, to {@code kiln.stream.ctl.<worker's node>}: {@value #CREDIT} (credits: chunks consumed since the last
 * grant) and {@value #CANCEL}.
 *
 * @param type one of the constants
 * @param stream the stream's id
 * @param seq the chunk's index; for END the number of chunks
 * @param outputs a chunk's tensors; empty otherwise
 * @param credits for CREDIT
 * @param kind for ERROR: an {@link InferenceException.Kind} name
 * @param error for ERROR: the message
 */
record StreamMessage(String type, String stream, long seq, List<Tensor> outputs, int credits, String kind,
                     String error) {

  static final String CHUNK = "chunk";
  static final String END = "end";
  static final String ERROR = "error";
  static final String CREDIT = "credit";
  static final String CANCEL = "cancel";

  StreamMessage {
    outputs = outputs == null ? List.of() : outputs;
  }

  static StreamMessage chunk(String stream, long seq, List<Tensor> outputs) {
    return new StreamMessage(CHUNK, stream, seq, outputs, 0, null, null);
  }

  static StreamMessage end(String stream, long chunks) {
    return new StreamMessage(END, stream, chunks, List.of(), 0, null, null);
  }

  static StreamMessage error(String stream, long seq, InferenceException e) {
    return new StreamMessage(ERROR, stream, seq, List.of(), 0, e.kind().name(), e.getMessage());
  }

  static StreamMessage credit(String stream, int credits) {
    return new StreamMessage(CREDIT, stream, 0, List.of(), credits, null, null);
  }

  static StreamMessage cancel(String stream) {
    return new StreamMessage(CANCEL, stream, 0, List.of(), 0, null, null);
  }

  /** The error an ERROR message carries. */
  InferenceException failure() {
    InferenceException.Kind k;
    try {
      k = InferenceException.Kind.valueOf(kind);
    } catch (RuntimeException e) {
      k = InferenceException.Kind.INTERNAL;
    }
    return new InferenceException(k, error == null ? "stream failed" : error);
  }

  Buffer encode() {
    try {
      return Buffer.buffer(WireCodec.cbor().writeValueAsBytes(this));
    } catch (IOException e) {
      throw new IllegalStateException("cannot encode a stream message", e);
    }
  }

  /** @throws IllegalArgumentException when the bytes are not a stream message (or exceed the codec's limit) */
  static StreamMessage decode(Buffer body) {
    if (body == null || body.length() > WireCodec.MAX_MESSAGE_BYTES) {
      throw new IllegalArgumentException("stream message missing or over " + WireCodec.MAX_MESSAGE_BYTES + " bytes");
    }
    try {
      StreamMessage m = WireCodec.cbor().readValue(body.getBytes(), StreamMessage.class);
      if (m.type() == null || m.stream() == null) {
        throw new IllegalArgumentException("stream message without type or stream");
      }
      return m;
    } catch (IOException e) {
      throw new IllegalArgumentException("not a stream message: " + e.getMessage(), e);
    }
  }
}
