package io.kiln.engines.llm.impl;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.Tensor;
import io.kiln.pools.TextModels;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** Reading text requests and writing text answers as {@link TextModels} lays them out. */
final class Chunks {

  private Chunks() {
  }

  /**
   * The texts of a request's {@value TextModels#TEXT_INPUT}, one per element.
   *
   * @throws InferenceException INVALID_INPUT naming the input when it is missing, not BYTES or not UTF-8
   */
  static List<String> texts(InferenceRequest request) {
    Tensor t = request.inputs().stream().filter(i -> i.name().equals(TextModels.TEXT_INPUT)).findFirst()
        .orElseThrow(() -> InferenceException.invalid(TextModels.TEXT_INPUT + ": required, the request has "
            + request.inputs().stream().map(Tensor::name).toList()));
    if (t.datatype() != DataType.BYTES) {
      throw InferenceException.invalid(TextModels.TEXT_INPUT + ": must be BYTES (UTF-8 text), got " + t.datatype());
    }
    List<byte[]> elements;
    try {
      elements = t.byteElements();
    } catch (IllegalArgumentException e) {
      throw InferenceException.invalid(TextModels.TEXT_INPUT + ": " + e.getMessage());
    }
    List<String> texts = new ArrayList<>(elements.size());
    for (byte[] e : elements) {
      try {
        texts.add(StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(e)).toString());
      } catch (CharacterCodingException x) {
        throw InferenceException.invalid(TextModels.TEXT_INPUT + ": element " + texts.size() + " is not UTF-8 text");
      }
    }
    return texts;
  }

  static Tensor text(String name, String value) {
    return Tensor.ofBytes(name, new long[] {1}, List.of(value.getBytes(StandardCharsets.UTF_8)));
  }

  static Tensor int32(String name, int[] values) {
    ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    for (int v : values) {
      b.putInt(v);
    }
    return new Tensor(name, DataType.INT32, new long[] {values.length}, b.array());
  }

  /**
   * The outputs a request gets, in order: those it names (each one the model has), else all of the model's.
   *
   * @throws InferenceException INVALID_INPUT naming an output the model does not have
   */
  static List<String> picked(InferenceRequest request, List<String> modelOutputs) {
    if (request.outputs().isEmpty()) {
      return modelOutputs;
    }
    for (String o : request.outputs()) {
      if (!modelOutputs.contains(o)) {
        throw InferenceException.invalid("outputs: the model has no output '" + o + "', it has " + modelOutputs);
      }
    }
    return request.outputs();
  }
}
