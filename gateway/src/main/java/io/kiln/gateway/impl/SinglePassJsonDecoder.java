package io.kiln.gateway.impl;

import io.kiln.gateway.impl.RequestHeader.InputHeader;
import io.kiln.gateway.impl.RequestHeader.OutputHeader;
import io.kiln.pools.DataType;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The fast path for OIP JSON request bodies: one pass over the bytes in place, reading the header and each
 * input's {@code data} straight into its raw little-endian bytes, with no Jackson parser, token strings,
 * per-element field paths or boxed values. It returns what {@link JsonRequestDecoder} and
 * {@link JsonTensorReader} would produce from the same body, or null whenever it is not certain to: any
 * malformed or unusual input (see {@link JsonScanner}), and any request those would reject. The caller then
 * decodes the body with them, so every error keeps its exact message and the field it names; this class
 * never reports one. Validation against the model stays with the caller ({@link InputPlans}), as for the
 * two-pass decoders. Stateless and thread-safe.
 */
final class SinglePassJsonDecoder {

  /**
   * @param header the request as {@link JsonRequestDecoder} would decode it
   * @param data per input index, its {@code data} as raw bytes of its datatype; null where it has none
   */
  record Result(RequestHeader header, byte[][] data) {
  }

  private static final byte[] ID = ascii("id");
  private static final byte[] PARAMETERS = ascii("parameters");
  private static final byte[] INPUTS = ascii("inputs");
  private static final byte[] OUTPUTS = ascii("outputs");
  private static final byte[] NAME = ascii("name");
  private static final byte[] DATATYPE = ascii("datatype");
  private static final byte[] SHAPE = ascii("shape");
  private static final byte[] DATA = ascii("data");

  /**
   * @return the decoded request, or null: decode it with the two-pass decoders instead
   */
  Result decode(byte[] body, int offset, int length) {
    try {
      return new Pass(body, offset, length).request();
    } catch (RuntimeException e) {
      // Bail, an input error, or anything unforeseen: the two-pass decoders give the answer and its message.
      return null;
    }
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  /** One body's decoding. */
  private static final class Pass {
    private final JsonScanner s;
    private final long maxElements;
    private final List<byte[]> data = new ArrayList<>(1);

    Pass(byte[] body, int offset, int length) {
      s = new JsonScanner(body, offset, length);
      // As the two-pass decoder bounds it: no JSON element takes less than two bytes (a digit and a comma).
      maxElements = (length + 1L) / 2;
    }

    Result request() {
      s.expect('{');
      String id = "";
      Map<String, Object> parameters = Map.of();
      List<InputHeader> inputs = null;
      List<OutputHeader> outputs = List.of();
      Members seen = new Members();
      if (!s.consume('}')) {
        do {
          s.key();
          if (s.keyIs(ID)) {
            seen.once(0);
            if (s.peek() != '"') {
              throw JsonScanner.bail();
            }
            id = s.string();
          } else if (s.keyIs(PARAMETERS)) {
            seen.once(1);
            parameters = parameters();
          } else if (s.keyIs(INPUTS)) {
            seen.once(2);
            inputs = inputs();
          } else if (s.keyIs(OUTPUTS)) {
            seen.once(3);
            outputs = outputs();
          } else {
            seen.unknown(s.keyString());
            s.skipValue(1);
          }
        } while (s.more('}'));
      }
      if (!s.atEnd() || inputs == null) {
        throw JsonScanner.bail();
      }
      return new Result(new RequestHeader(id, parameters, inputs, outputs), data.toArray(new byte[0][]));
    }

    private List<InputHeader> inputs() {
      s.expect('[');
      List<InputHeader> inputs = new ArrayList<>(1);
      if (s.consume(']')) {
        return inputs;
      }
      do {
        inputs.add(input());
      } while (s.more(']'));
      return inputs;
    }

    private InputHeader input() {
      s.expect('{');
      String name = null;
      String datatype = null;
      long[] shape = null;
      Map<String, Object> parameters = Map.of();
      boolean hasData = false;
      byte[] bytes = null;
      int dataAt = -1;
      Members seen = new Members();
      if (!s.consume('}')) {
        do {
          s.key();
          if (s.keyIs(NAME)) {
            seen.once(0);
            name = stringValue();
          } else if (s.keyIs(DATATYPE)) {
            seen.once(1);
            datatype = stringValue();
          } else if (s.keyIs(SHAPE)) {
            seen.once(2);
            shape = shape();
          } else if (s.keyIs(PARAMETERS)) {
            seen.once(3);
            parameters = parameters();
          } else if (s.keyIs(DATA)) {
            seen.once(4);
            // A bare value is a scalar's one element: read here once its shape [] is known, else left to Jackson.
            if (s.peek() != '[' && (shape == null || shape.length != 0 || datatype == null)) {
              throw JsonScanner.bail();
            }
            hasData = true;
            if (datatype != null && shape != null) {
              bytes = new JsonDataReader(s, type(datatype), shape, maxElements).read();
            } else {
              // Data before its datatype or shape (legal, unusual): checked now, read once they are known.
              dataAt = s.pos;
              s.skipValue(1);
            }
          } else {
            seen.unknown(s.keyString());
            s.skipValue(1);
          }
        } while (s.more('}'));
      }
      if (name == null || datatype == null || shape == null) {
        throw JsonScanner.bail();
      }
      if (dataAt >= 0) {
        int resume = s.pos;
        s.pos = dataAt;
        bytes = new JsonDataReader(s, type(datatype), shape, maxElements).read();
        s.pos = resume;
      }
      long binarySize = Fields.nonNegativeLong(parameters, Fields.BINARY_DATA_SIZE, "");
      data.add(bytes);
      return new InputHeader(name, datatype, shape, parameters, binarySize, hasData);
    }

    private List<OutputHeader> outputs() {
      s.expect('[');
      List<OutputHeader> outputs = new ArrayList<>();
      if (s.consume(']')) {
        return outputs;
      }
      do {
        s.expect('{');
        String name = null;
        Map<String, Object> parameters = Map.of();
        Members seen = new Members();
        if (!s.consume('}')) {
          do {
            s.key();
            if (s.keyIs(NAME)) {
              seen.once(0);
              name = stringValue();
            } else if (s.keyIs(PARAMETERS)) {
              seen.once(1);
              parameters = parameters();
            } else {
              seen.unknown(s.keyString());
              s.skipValue(1);
            }
          } while (s.more('}'));
        }
        if (name == null) {
          throw JsonScanner.bail();
        }
        outputs.add(new OutputHeader(name, Fields.bool(parameters, Fields.BINARY_DATA, ""), parameters));
      } while (s.more(']'));
      return outputs;
    }

    private String stringValue() {
      if (s.peek() != '"') {
        throw JsonScanner.bail();
      }
      return s.string();
    }

    private long[] shape() {
      s.expect('[');
      long[] dims = new long[4];
      int n = 0;
      if (s.consume(']')) {
        return new long[0];
      }
      do {
        s.number();
        if (!s.numberIsInt || n == JsonRequestDecoder.MAX_NESTING_DEPTH) {
          throw JsonScanner.bail();
        }
        if (n == dims.length) {
          dims = Arrays.copyOf(dims, n * 2);
        }
        dims[n++] = s.numberLong;
      } while (s.more(']'));
      return n == dims.length ? dims : Arrays.copyOf(dims, n);
    }

    /** A flat object of string, number and boolean values, as {@link JsonRequestDecoder#parameters} reads it. */
    private Map<String, Object> parameters() {
      s.expect('{');
      Map<String, Object> params = new LinkedHashMap<>();
      if (s.consume('}')) {
        return params;
      }
      do {
        s.key();
        String key = s.keyString();
        int c = s.peek();
        Object value;
        if (c == '"') {
          value = s.string();
        } else if (c == 't' || c == 'f') {
          value = s.bool();
        } else {
          s.number();
          value = s.numberIsInt ? (Object) s.numberLong : (Object) s.numberDouble;
        }
        if (params.putIfAbsent(key, value) != null) {
          throw JsonScanner.bail(); // a duplicate member: Jackson's strict duplicate detection reports it
        }
      } while (s.more('}'));
      return params;
    }

    private static DataType type(String datatype) {
      return DataType.parse(datatype).orElseThrow(JsonScanner::bail);
    }
  }

  /** The members an object has had: each known one at most once, unknown ones never twice (as Jackson checks). */
  private static final class Members {
    private int known;
    private List<String> unknown;

    void once(int bit) {
      if ((known & (1 << bit)) != 0) {
        throw JsonScanner.bail();
      }
      known |= 1 << bit;
    }

    void unknown(String name) {
      if (unknown == null) {
        unknown = new ArrayList<>(2);
      } else if (unknown.contains(name)) {
        throw JsonScanner.bail();
      }
      unknown.add(name);
    }
  }
}
