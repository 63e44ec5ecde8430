package io.kiln.loadtest.impl;

import com.google.protobuf.ByteString;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.loadtest.TensorData;
import java.util.List;

/**
 * Builds KServe {@code inference.ModelInferRequest} messages with the classes generated from the same
 * {@code grpc_predict_v2.proto} the gateway serves (module {@code protocol}), tensors in
 * {@code raw_input_contents}. The generator encodes each request template once, so this is off the hot path.
 * Stateless.
 */
public final class ModelInferEncoder {

  private ModelInferEncoder() {
  }

  /** The serialized request (without gRPC framing); {@code modelVersion} may be empty. */
  public static byte[] encode(String model, String modelVersion, List<TensorData> inputs) {
    ModelInferRequest.Builder request = ModelInferRequest.newBuilder().setModelName(model).setModelVersion(modelVersion);
    for (TensorData t : inputs) {
      ModelInferRequest.InferInputTensor.Builder tensor = ModelInferRequest.InferInputTensor.newBuilder()
          .setName(t.name()).setDatatype(t.datatype());
      for (long d : t.shape()) {
        tensor.addShape(d);
      }
      request.addInputs(tensor).addRawInputContents(ByteString.copyFrom(t.raw()));
    }
    return request.build().toByteArray();
  }
}
