package io.kiln.pools;

import java.util.List;
import java.util.Map;

/**
 * The answer to one {@link InferenceRequest}.
 *
 * @param id the request's id
 * @param modelName the deployment that served it
 * @param modelVersion the version that served it
 * @param outputs output tensors, one per requested output (all when none was named)
 * @param parameters response parameters, e.g. {@code kiln_node} (where it ran) and timings
 */
public record InferenceResponse(String id, String modelName, String modelVersion, List<Tensor> outputs,
                                Map<String, Object> parameters) {

  public InferenceResponse {
    id = id == null ? "" : id;
    outputs = List.copyOf(outputs);
    parameters = parameters == null ? Map.of() : Map.copyOf(parameters);
  }
}
