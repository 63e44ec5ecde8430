package io.kiln.engines.python.impl;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.pools.DataType;
import io.kiln.pools.Tensor;
import io.kiln.pools.spi.ByteElements;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * The frames the JVM and a Python worker process ({@code io/kiln/pools/python/kiln_worker.py}) exchange
 * over the process's stdin and stdout; that script's opening comment is the full protocol.
 *
 * <p>Frame, version {@value #VERSION}, integers little-endian: the magic {@code KILN} (4 bytes), the header
 * length (uint32, 1 byte to {@value #MAX_HEADER} bytes), the header (UTF-8 JSON object with {@code v},
 * {@code op}, {@code id} and, for {@code predict}/{@code result}, {@code tensors}: name, datatype, shape and
 * nbytes of each), then each tensor's raw row-major little-endian bytes in order. Ops: {@code load} →
 * {@code loaded}, {@code predict} → {@code result} ({@code final: true}), {@code close} → {@code closed};
 * any request may be answered {@code error} ({@code fatal} says whether the process is going away).
 * Streams: {@code stream_open} → {@code stream_opened}, {@code stream_next} → {@code chunk} or
 * {@code stream_end}, {@code stream_close} → {@code stream_closed} (one yield of the generator per pull).
 *
 * <p>Not thread-safe; one process's reader and writer are used by one thread at a time.
 */
final class PythonFrames {

  static final int VERSION = 1;
  static final int MAX_HEADER = 1 << 20;
  private static final byte[] MAGIC = {'K', 'I', 'L', 'N'};
  /**
   * The datatypes the worker script carries: numpy's fixed-size ones (read with {@code frombuffer}) and BYTES
   * (length-prefixed elements, an object array of {@code bytes} in Python); BF16 has no numpy type.
   */
  static final Set<DataType> SUPPORTED = EnumSet.complementOf(EnumSet.of(DataType.BF16));
  private static final ObjectMapper JSON = new ObjectMapper();

  /** A decoded frame: its header and its tensors (with the names and datatypes the header gives). */
  record Frame(JsonNode header, List<Tensor> tensors) {
    String op() {
      return header.path("op").asText("");
    }

    long id() {
      return header.path("id").asLong(-1);
    }
  }

  /** The other side sent something that is not a version-1 frame: the channel is unusable. */
  static final class BadFrameException extends IOException {
    BadFrameException(String message) {
      super(message);
    }
  }

  private PythonFrames() {
  }

  static ObjectNode header(String op, long id) {
    ObjectNode h = JSON.createObjectNode();
    h.put("v", VERSION);
    h.put("op", op);
    h.put("id", id);
    return h;
  }

  static ObjectMapper json() {
    return JSON;
  }

  /** Writes one frame and flushes; adds the {@code tensors} list to {@code header}. */
  static void write(OutputStream out, ObjectNode header, List<Tensor> tensors) throws IOException {
    if (!tensors.isEmpty()) {
      ArrayNode list = header.putArray("tensors");
      for (Tensor t : tensors) {
        ObjectNode e = list.addObject();
        e.put("name", t.name());
        e.put("datatype", t.datatype().name());
        ArrayNode shape = e.putArray("shape");
        for (long d : t.shape()) {
          shape.add(d);
        }
        e.put("nbytes", t.data().length);
      }
    }
    byte[] body = JSON.writeValueAsBytes(header);
    byte[] prefix = new byte[8];
    System.arraycopy(MAGIC, 0, prefix, 0, 4);
    putIntLe(prefix, 4, body.length);
    out.write(prefix);
    out.write(body);
    for (Tensor t : tensors) {
      out.write(t.data());
    }
    out.flush();
  }

  /**
   * Reads one frame.
   *
   * @throws EOFException when the stream ends before a frame starts (the process closed it or died)
   * @throws BadFrameException when what arrives is not a frame, naming what is wrong
   * @throws IOException when the stream fails or ends inside a frame
   */
  static Frame read(InputStream in) throws IOException {
    byte[] prefix = new byte[8];
    int first = readFully(in, prefix, 0);
    if (first == 0) {
      throw new EOFException("the Python process closed its channel");
    }
    if (first < prefix.length) {
      throw new BadFrameException("the channel ended after " + first + " bytes of a frame prefix: "
          + printable(prefix, first));
    }
    for (int i = 0; i < 4; i++) {
      if (prefix[i] != MAGIC[i]) {
        throw new BadFrameException("a frame must start with KILN, got " + printable(prefix, 8)
            + " (did something write to the process's file descriptor 1 directly?)");
      }
    }
    int length = getIntLe(prefix, 4);
    if (length <= 0 || length > MAX_HEADER) {
      throw new BadFrameException("frame header length " + Integer.toUnsignedString(length) + " is not in 1.." + MAX_HEADER);
    }
    byte[] body = new byte[length];
    if (readFully(in, body, 0) < length) {
      throw new EOFException("the channel ended inside a frame header");
    }
    JsonNode header;
    try {
      header = JSON.readTree(body);
    } catch (JsonProcessingException e) {
      throw new BadFrameException("frame header is not JSON: " + e.getOriginalMessage() + " in "
          + printable(body, Math.min(body.length, 120)));
    }
    if (header == null || !header.isObject() || header.path("v").asInt(-1) != VERSION || !header.path("op").isTextual()) {
      throw new BadFrameException("frame header is not a version-" + VERSION + " object with an op: "
          + printable(body, Math.min(body.length, 200)));
    }
    List<Tensor> tensors = new ArrayList<>();
    for (JsonNode t : header.path("tensors")) {
      tensors.add(readTensor(in, t));
    }
    return new Frame(header, List.copyOf(tensors));
  }

  private static Tensor readTensor(InputStream in, JsonNode t) throws IOException {
    String name = t.path("name").asText("");
    DataType type = DataType.parse(t.path("datatype").asText(null)).filter(SUPPORTED::contains)
        .orElseThrow(() -> new BadFrameException("tensor '" + name + "' has datatype " + t.path("datatype")
            + ", not one of " + SUPPORTED));
    JsonNode dims = t.path("shape");
    if (!dims.isArray()) {
      throw new BadFrameException("tensor '" + name + "' has no shape");
    }
    long[] shape = new long[dims.size()];
    for (int d = 0; d < shape.length; d++) {
      shape[d] = dims.get(d).asLong(-1);
    }
    long nbytes = t.path("nbytes").asLong(-1);
    long elements;
    try {
      elements = Tensor.elementCount(shape);
    } catch (IllegalArgumentException | ArithmeticException e) {
      throw new BadFrameException("tensor '" + name + "': bad shape " + dims);
    }
    if (type == DataType.BYTES) {
      // Variable length: at least the 4-byte prefix per element; the prefixes are checked once read.
      if (nbytes < 0 || nbytes > Integer.MAX_VALUE - 16 || elements > nbytes / 4) {
        throw new BadFrameException("tensor '" + name + "': " + nbytes + " bytes cannot hold " + elements
            + " BYTES elements of shape " + dims);
      }
      byte[] data = new byte[(int) nbytes];
      if (readFully(in, data, 0) < data.length) {
        throw new EOFException("the channel ended inside tensor '" + name + "'");
      }
      try {
        ByteElements.offsets(data, elements, "tensor '" + name + "'");
      } catch (IllegalArgumentException e) {
        throw new BadFrameException(e.getMessage());
      }
      return new Tensor(name, type, shape, data);
    }
    long want = elements * type.byteSize();
    if (nbytes != want || nbytes > Integer.MAX_VALUE - 16) {
      throw new BadFrameException("tensor '" + name + "': " + nbytes + " bytes do not fit shape " + dims + " of " + type);
    }
    byte[] data = new byte[(int) nbytes];
    if (readFully(in, data, 0) < data.length) {
      throw new EOFException("the channel ended inside tensor '" + name + "'");
    }
    return new Tensor(name, type, shape, data);
  }

  /** Python's error of an {@code error} reply: its type, message and the end of its traceback. */
  static String describeError(JsonNode header) {
    JsonNode e = header.path("error");
    String traceback = e.path("traceback").asText("").strip();
    return e.path("type").asText("Error") + ": " + e.path("message").asText("") + (traceback.isEmpty() ? ""
        : "\n" + traceback);
  }

  /** Reads until {@code buf} is full or the stream ends; returns the bytes read. */
  private static int readFully(InputStream in, byte[] buf, int from) throws IOException {
    int got = from;
    while (got < buf.length) {
      int n = in.read(buf, got, buf.length - got);
      if (n < 0) {
        break;
      }
      got += n;
    }
    return got;
  }

  private static void putIntLe(byte[] b, int at, int v) {
    b[at] = (byte) v;
    b[at + 1] = (byte) (v >>> 8);
    b[at + 2] = (byte) (v >>> 16);
    b[at + 3] = (byte) (v >>> 24);
  }

  private static int getIntLe(byte[] b, int at) {
    return (b[at] & 0xff) | (b[at + 1] & 0xff) << 8 | (b[at + 2] & 0xff) << 16 | (b[at + 3] & 0xff) << 24;
  }

  /** The bytes as text where printable, escaped otherwise, for error messages. */
  static String printable(byte[] b, int n) {
    String s = new String(b, 0, n, StandardCharsets.ISO_8859_1);
    StringBuilder out = new StringBuilder("'");
    for (char c : s.toCharArray()) {
      if (c >= 0x20 && c < 0x7f) {
        out.append(c);
      } else {
        out.append(String.format("\\x%02x", (int) c));
      }
    }
    return out.append('\'').toString();
  }
}
