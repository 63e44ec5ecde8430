package io.kiln.gateway.impl;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import io.kiln.gateway.impl.InputPlans.InputPlan;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * Second pass over an OIP JSON request: decodes each input's {@code data} (flat or nested) straight into
 * raw little-endian bytes of its validated datatype. The output buffer is sized from the validated shape
 * (already checked against the body size), and a {@code data} array longer than its shape fails at the first
 * surplus element, so nothing grows beyond what was declared. Thread-safe.
 */
final class JsonTensorReader {

  private final JsonFactory factory;

  JsonTensorReader(JsonFactory factory) {
    this.factory = factory;
  }

  /**
   * @param plans the validated inputs, indexed like the request's {@code inputs}
   * @param wanted which plans to decode (those with inline data)
   * @return the raw bytes per plan index; null where not wanted
   */
  byte[][] read(byte[] body, int offset, int length, List<InputPlan> plans, boolean[] wanted) {
    byte[][] out = new byte[plans.size()][];
    try (JsonParser p = factory.createParser(body, offset, length)) {
      p.nextToken();
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        p.nextToken();
        if (!field.equals("inputs")) {
          p.skipChildren();
          continue;
        }
        int i = 0;
        while (p.nextToken() == JsonToken.START_OBJECT) {
          while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            p.nextToken();
            if (f.equals("data") && wanted[i]) {
              out[i] = new DataDecoder(plans.get(i)).decode(p);
            } else {
              p.skipChildren();
            }
          }
          i++;
        }
      }
      return out;
    } catch (JsonProcessingException e) {
      throw JsonRequestDecoder.malformed(e);
    } catch (IOException e) {
      throw InferenceException.invalid("request body: unreadable: " + e.getMessage());
    }
  }

  /**
   * Decodes one {@code data} array (or a scalar's bare element), checking it is rectangular and agrees with the shape.
   */
  private static final class DataDecoder {
    private static final int ARRAYS = 1;
    private static final int VALUES = 2;

    private final InputPlan plan;
    private final DataType type;
    private final String path;
    private final ByteBuffer fixed;
    private final ByteArrayOutputStream variable;
    private final long[] dims = new long[JsonRequestDecoder.MAX_NESTING_DEPTH + 1];
    private final int[] kinds = new int[JsonRequestDecoder.MAX_NESTING_DEPTH + 1];
    private int rank;
    private long count;

    DataDecoder(InputPlan plan) {
      this.plan = plan;
      this.type = plan.type();
      this.path = plan.path() + ".data";
      if (type == DataType.BYTES) {
        fixed = null;
        variable = new ByteArrayOutputStream();
      } else {
        // Safe to allocate: the caller checked the declared element count against the body size.
        fixed = ByteBuffer.allocate(Math.toIntExact(plan.fixedByteSize())).order(ByteOrder.LITTLE_ENDIAN);
        variable = null;
      }
      Arrays.fill(dims, -1);
    }

    byte[] decode(JsonParser p) throws IOException {
      if (p.currentToken() == JsonToken.START_ARRAY) {
        array(p, 0);
      } else {
        element(p, p.currentToken()); // a scalar's bare element: the first pass allowed it for shape [] only
      }
      long[] shape = plan.header().shape();
      if (rank > 1 && !Arrays.equals(Arrays.copyOf(dims, rank), shape)) {
        throw InferenceException.invalid(path + ": nested dimensions " + Arrays.toString(Arrays.copyOf(dims, rank))
            + " do not match shape " + Arrays.toString(shape));
      }
      if (count != plan.elementCount()) {
        throw InferenceException.invalid(path + ": has " + count + " elements but shape " + Arrays.toString(shape)
            + " needs " + plan.elementCount());
      }
      return fixed != null ? fixed.array() : variable.toByteArray();
    }

    private void array(JsonParser p, int depth) throws IOException {
      long len = 0;
      JsonToken t;
      while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
        if (t == JsonToken.START_ARRAY) {
          kind(depth, ARRAYS);
          array(p, depth + 1);
        } else {
          kind(depth, VALUES);
          element(p, t);
        }
        len++;
      }
      if (depth >= rank) {
        rank = depth + 1;
      }
      if (dims[depth] < 0) {
        dims[depth] = len;
      } else if (dims[depth] != len) {
        throw InferenceException.invalid(path + ": nested arrays at depth " + depth + " have unequal lengths ("
            + dims[depth] + " and " + len + ")");
      }
    }

    private void kind(int depth, int kind) {
      if (kinds[depth] == 0) {
        kinds[depth] = kind;
      } else if (kinds[depth] != kind) {
        throw InferenceException.invalid(path + ": mixes arrays and values at depth " + depth);
      }
    }

    private void element(JsonParser p, JsonToken t) throws IOException {
      if (count == plan.elementCount()) {
        throw InferenceException.invalid(path + ": more than the " + plan.elementCount() + " elements shape "
            + Arrays.toString(plan.header().shape()) + " holds");
      }
      String where = path + " element " + count;
      switch (type) {
        case BOOL -> {
          if (t != JsonToken.VALUE_TRUE && t != JsonToken.VALUE_FALSE) {
            throw InferenceException.invalid(where + ": expected true or false for BOOL");
          }
          Elements.putBool(fixed, t == JsonToken.VALUE_TRUE);
        }
        case BYTES -> {
          if (t != JsonToken.VALUE_STRING) {
            throw InferenceException.invalid(where + ": expected a string for BYTES");
          }
          byte[] b = p.getText().getBytes(StandardCharsets.UTF_8);
          int n = b.length;
          variable.write(n);
          variable.write(n >>> 8);
          variable.write(n >>> 16);
          variable.write(n >>> 24);
          variable.write(b, 0, n);
        }
        case FP16, BF16, FP32, FP64 -> {
          if (t != JsonToken.VALUE_NUMBER_INT && t != JsonToken.VALUE_NUMBER_FLOAT) {
            throw InferenceException.invalid(where + ": expected a number for " + type);
          }
          Elements.putFloat(fixed, type, p.getDoubleValue(), where);
        }
        default -> {
          if (t != JsonToken.VALUE_NUMBER_INT) {
            throw InferenceException.invalid(where + ": expected an integer for " + type);
          }
          if (p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
            if (type != DataType.UINT64) {
              throw InferenceException.invalid(where + ": " + p.getText() + " is out of range for " + type);
            }
            Elements.putUint64(fixed, p.getBigIntegerValue(), where);
          } else {
            Elements.putInteger(fixed, type, p.getLongValue(), where);
          }
        }
      }
      count++;
    }
  }
}
