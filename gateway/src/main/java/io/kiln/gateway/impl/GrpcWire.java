package io.kiln.gateway.impl;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.UnsafeByteOperations;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcService;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.netty.buffer.Unpooled;
import io.vertx.core.internal.buffer.BufferInternal;
import io.vertx.grpc.common.CodecException;
import io.vertx.grpc.common.GrpcMessage;
import io.vertx.grpc.common.GrpcMessageDecoder;
import io.vertx.grpc.common.GrpcMessageEncoder;
import io.vertx.grpc.common.ServiceMethod;
import io.vertx.grpc.common.WireFormat;

/**
 * {@code ModelInfer} as the gateway serves it: the generated method with fewer copies of the tensor bytes.
 *
 * <p>Decoding: the generated decoder parses the message's bytes with protobuf's default of copying every
 * {@code bytes} field, so a {@code raw_input_contents} entry was copied from the message into a ByteString and
 * again into the tensor. Here the parser aliases the message's array (a fresh copy of the frame that nothing
 * else holds), and {@link GrpcCodec} copies each tensor once, straight into its own array. Encoding: the
 * generated encoder serialises into an array and then copies it into a new Vert.x buffer; here that array is
 * wrapped. {@code raw_output_contents} already wrap the tensors' arrays ({@link GrpcCodec#encode}). The JSON wire
 * format (not used by the gRPC clients Kiln knows of) goes through the generated codecs unchanged.
 */
final class GrpcWire {

  private static final GrpcMessageDecoder<ModelInferRequest> GENERATED_DECODER =
      GrpcMessageDecoder.decoder(ModelInferRequest.newBuilder());
  private static final GrpcMessageEncoder<ModelInferResponse> GENERATED_ENCODER = GrpcMessageEncoder.encoder();

  static final GrpcMessageDecoder<ModelInferRequest> DECODER = new GrpcMessageDecoder<>() {
    @Override
    public ModelInferRequest decode(GrpcMessage msg) throws CodecException {
      if (msg.format() != WireFormat.PROTOBUF) {
        return GENERATED_DECODER.decode(msg);
      }
      try {
        // Aliasing applies only to an input protobuf knows to be immutable: a wrapped ByteString's, not
        // CodedInputStream.newInstance(byte[])'s.
        CodedInputStream in = UnsafeByteOperations.unsafeWrap(msg.payload().getBytes()).newCodedInput();
        in.enableAliasing(true);
        ModelInferRequest request = ModelInferRequest.parseFrom(in);
        in.checkLastTagWas(0);
        return request;
      } catch (java.io.IOException e) { // InvalidProtocolBufferException: what the generated decoder reports
        throw new CodecException(e);
      }
    }

    @Override
    public boolean accepts(WireFormat format) {
      return GENERATED_DECODER.accepts(format);
    }
  };

  static final GrpcMessageEncoder<ModelInferResponse> ENCODER = new GrpcMessageEncoder<>() {
    @Override
    public GrpcMessage encode(ModelInferResponse msg, WireFormat format) throws CodecException {
      if (format != WireFormat.PROTOBUF) {
        return GENERATED_ENCODER.encode(msg, format);
      }
      return GrpcMessage.message("identity", format, BufferInternal.buffer(Unpooled.wrappedBuffer(msg.toByteArray())));
    }

    @Override
    public boolean accepts(WireFormat format) {
      return GENERATED_ENCODER.accepts(format);
    }
  };

  /** {@link GRPCInferenceServiceGrpcService#ModelInfer} with the codecs above. */
  static final ServiceMethod<ModelInferRequest, ModelInferResponse> MODEL_INFER = ServiceMethod.server(
      GRPCInferenceServiceGrpcService.ModelInfer.serviceName(), GRPCInferenceServiceGrpcService.ModelInfer.methodName(),
      ENCODER, DECODER);

  private GrpcWire() {
  }
}
