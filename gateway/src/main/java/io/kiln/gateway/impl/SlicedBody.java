package io.kiln.gateway.impl;

import io.netty.buffer.ByteBuf;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.internal.buffer.BufferInternal;

/**
 * Ends an HTTP/1.1 response with a large body written in slices under the connection's flow control rather than in
 * one write.
 *
 * <p>Why (issue #36): Netty copies a heap buffer into direct memory when it is written
 * ({@code AbstractNioChannel.newDirectBuffer}), all of it at once. Written whole, an 8.48 MB binary output costs,
 * on every answer, one direct buffer of that size (too large for the allocator's pools: allocated, zeroed and
 * freed each time) and a copy of all of it on the event loop before the first byte leaves. In slices of
 * {@link #SLICE_BYTES} each copy goes into a small pooled buffer that is reused while it is still in the cache, and
 * the client reads the first slices while later ones are copied. A slice is a view of the answer's bytes (a
 * tensor's array is immutable by contract), never a copy.
 *
 * <p>Runs on the response's event loop and never blocks. A client that goes away mid-body closes the response: no
 * further slice is written, and the answer's bytes are left to the garbage collector.
 */
final class SlicedBody {

  /**
   * Bytes per write, and the size from which a body is sliced: large enough that a 64 MiB body takes a few hundred
   * writes, small enough to come from the allocator's pools.
   */
  static final int SLICE_BYTES = 256 * 1024;

  private final HttpServerResponse resp;
  private final ByteBuf body;
  private final int end;
  private int pos;

  private SlicedBody(HttpServerResponse resp, ByteBuf body) {
    this.resp = resp;
    this.body = body;
    this.pos = body.readerIndex();
    this.end = body.writerIndex();
  }

  /**
   * Ends {@code resp} with {@code body}: in one write up to {@link #SLICE_BYTES}, in slices beyond (with its
   * {@code Content-Length} set first, as a body written in parts needs). Status and other headers must be set.
   */
  static void end(HttpServerResponse resp, Buffer body) {
    if (body.length() <= SLICE_BYTES || !(body instanceof BufferInternal internal)) {
      resp.end(body);
      return;
    }
    resp.putHeader(HttpHeaders.CONTENT_LENGTH, Integer.toString(body.length()));
    new SlicedBody(resp, internal.getByteBuf()).next();
  }

  private void next() {
    while (!resp.closed()) {
      int n = Math.min(SLICE_BYTES, end - pos);
      // Retained: the channel releases each slice once written, and a slice shares its parent's count.
      Buffer slice = BufferInternal.buffer(body.retainedSlice(pos, n));
      pos += n;
      if (pos == end) {
        resp.end(slice);
        return;
      }
      resp.write(slice);
      if (resp.writeQueueFull()) {
        resp.drainHandler(v -> next());
        return;
      }
    }
  }
}
