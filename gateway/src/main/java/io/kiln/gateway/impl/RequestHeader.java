package io.kiln.gateway.impl;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * An inference request as the protocol stated it, before validation against the model and before tensor
 * data is decoded (JSON data is decoded in a second pass, once the sizes are known to be sane).
 *
 * @param id the client's request id ("" if none)
 * @param parameters request parameters (String, Long, Double, BigInteger or Boolean values)
 * @param inputs the inputs in request order
 * @param outputs the outputs asked for; empty means all
 */
record RequestHeader(String id, Map<String, Object> parameters, List<InputHeader> inputs, List<OutputHeader> outputs) {

  /**
   * Which outputs the client wants as raw bytes: an output's own {@code binary_data} parameter if given,
   * else the request's {@code binary_data_output}.
   *
   * @throws io.kiln.pools.InferenceException kind INVALID_INPUT if {@code binary_data_output} is not a boolean
   */
  Predicate<String> binaryOutputs() {
    boolean all = Boolean.TRUE.equals(Fields.bool(parameters, Fields.BINARY_DATA_OUTPUT, "parameters"));
    Map<String, Boolean> perOutput = new HashMap<>();
    for (OutputHeader o : outputs) {
      if (o.binaryData() != null) {
        perOutput.put(o.name(), o.binaryData());
      }
    }
    return name -> perOutput.getOrDefault(name, all);
  }

  /**
   * @param datatype the datatype as sent (validated later)
   * @param shape the shape as sent (validated later)
   * @param binaryDataSize {@code parameters.binary_data_size}, or -1 when absent
   * @param hasData whether the input carries inline contents (JSON {@code data}, gRPC {@code contents})
   */
  record InputHeader(String name, String datatype, long[] shape, Map<String, Object> parameters, long binaryDataSize,
                     boolean hasData) {
  }

  /**
   * @param binaryData the output's {@code parameters.binary_data}, or null when not given
   */
  record OutputHeader(String name, Boolean binaryData, Map<String, Object> parameters) {
  }
}
