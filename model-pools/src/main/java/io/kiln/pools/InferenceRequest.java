package io.kiln.pools;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One inference request as the pools see it, already decoded from HTTP or gRPC.
 *
 * @param id the client's request id, echoed in the response (may be empty)
 * @param inputs input tensors; their first dimension is this request's batch size
 * @param outputs names of the outputs wanted; empty means all
 * @param parameters protocol parameters passed through (string, number or boolean values)
 */
public record InferenceRequest(String id, List<Tensor> inputs, List<String> outputs, Map<String, Object> parameters) {

  public InferenceRequest {
    id = id == null ? "" : id;
    inputs = List.copyOf(Objects.requireNonNull(inputs, "inputs"));
    outputs = outputs == null ? List.of() : List.copyOf(outputs);
    parameters = parameters == null ? Map.of() : Map.copyOf(parameters);
  }

  public static InferenceRequest of(Tensor... inputs) {
    return new InferenceRequest("", List.of(inputs), List.of(), Map.of());
  }
}
