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
 * {@code ModelInfer}'s protobuf codecs with fewer copies of the tensor bytes.
 *
 * <p>Decoding ({@link #parse}): the generated decoder parses with protobuf's default of copying every {@code bytes}
 * field, so a {@code raw_input_contents} entry was copied from the message into a ByteString and again into the
 * tensor. Here the parser aliases the message's array (one that nothing else holds), and {@link GrpcCodec} copies
 * each tensor once, straight into its own array. Encoding ({@link #serialize}, {@link #frame}): the generated encoder
 * serialises into an array and then copies it into a new Vert.x buffer; here the small fields are serialised and the
 * {@code raw_output_contents}, which wrap the tensors' arrays ({@link GrpcCodec#encode}), are appended without a copy.
 *
 * <p>Plain calls never reach the codecs of {@link #MODEL_INFER}: {@link GrpcDirectInfer} reads their message into
 * one array and writes {@link #frame}'s buffer itself, with none of Vert.x's copies (its body buffer growing by
 * doubling, the payload taken as a fresh array, the answer copied behind the 5-byte prefix: GrpcMessageImpl.encode,
 * Vert.x 5.0.7). {@link #MODEL_INFER} serves the calls Vert.x's server keeps (compressed, gRPC-Web); the JSON wire
 * format goes through the generated codecs unchanged.
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
        return parse(msg.payload().getBytes());
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
      return GrpcMessage.message("identity", format, serialize(msg));
    }

    @Override
    public boolean accepts(WireFormat format) {
      return GENERATED_ENCODER.accepts(format);
    }
  };

  /**
   * Parses a message whose bytes nothing else holds or changes: its {@code bytes} fields alias {@code message}.
   *
   * @throws java.io.IOException (an InvalidProtocolBufferException) when the bytes are not such a message
   */
  static ModelInferRequest parse(byte[] message) throws java.io.IOException {
    // Aliasing applies only to an input protobuf knows to be immutable: a wrapped ByteString's, not
    // CodedInputStream.newInstance(byte[])'s.
    CodedInputStream in = UnsafeByteOperations.unsafeWrap(message).newCodedInput();
    in.enableAliasing(true);
    ModelInferRequest request = ModelInferRequest.parseFrom(in);
    in.checkLastTagWas(0);
    return request;
  }

  /**
   * The whole gRPC message as it goes on the wire: the 5-byte prefix (uncompressed, the length) and {@link
   * #serialize}'s bytes, the tensors still not copied.
   */
  static io.vertx.core.buffer.Buffer frame(ModelInferResponse msg) {
    io.netty.buffer.ByteBuf body = serializeBuf(msg);
    byte[] prefix = new byte[5];
    int len = body.readableBytes();
    prefix[1] = (byte) (len >>> 24);
    prefix[2] = (byte) (len >>> 16);
    prefix[3] = (byte) (len >>> 8);
    prefix[4] = (byte) len;
    return BufferInternal.buffer(Unpooled.wrappedBuffer(Unpooled.wrappedBuffer(prefix), body));
  }

  /** Below this many raw output bytes one array is cheaper than a composite buffer. */
  private static final int WRAP_RAW_FROM = 64 * 1024;

  /**
   * The message's protobuf bytes without copying its {@code raw_output_contents}: the other fields serialised into a
   * small array, then each entry's tag and length followed by the tensor's own bytes, wrapped. {@code
   * raw_output_contents} is the message's last field, so these are the very bytes {@code toByteArray} writes.
   */
  static io.vertx.core.buffer.Buffer serialize(ModelInferResponse msg) {
    return BufferInternal.buffer(serializeBuf(msg));
  }

  private static io.netty.buffer.ByteBuf serializeBuf(ModelInferResponse msg) {
    long raw = 0;
    for (int i = 0; i < msg.getRawOutputContentsCount(); i++) {
      raw += msg.getRawOutputContents(i).size();
    }
    if (raw < WRAP_RAW_FROM) {
      return Unpooled.wrappedBuffer(msg.toByteArray());
    }
    int n = msg.getRawOutputContentsCount();
    io.netty.buffer.ByteBuf[] parts = new io.netty.buffer.ByteBuf[1 + 2 * n];
    parts[0] = Unpooled.wrappedBuffer(msg.toBuilder().clearRawOutputContents().build().toByteArray());
    int field = ModelInferResponse.RAW_OUTPUT_CONTENTS_FIELD_NUMBER;
    for (int i = 0; i < n; i++) {
      com.google.protobuf.ByteString contents = msg.getRawOutputContents(i);
      byte[] prefix = new byte[com.google.protobuf.CodedOutputStream.computeTagSize(field)
          + com.google.protobuf.CodedOutputStream.computeUInt32SizeNoTag(contents.size())];
      com.google.protobuf.CodedOutputStream out = com.google.protobuf.CodedOutputStream.newInstance(prefix);
      try {
        out.writeTag(field, com.google.protobuf.WireFormat.WIRETYPE_LENGTH_DELIMITED);
        out.writeUInt32NoTag(contents.size());
        out.flush();
      } catch (java.io.IOException e) { // an exactly sized array: cannot overflow
        throw new java.io.UncheckedIOException(e);
      }
      parts[1 + 2 * i] = Unpooled.wrappedBuffer(prefix);
      // A wrapped tensor array (GrpcCodec.encode) reads back as a view of that array, not a copy.
      parts[2 + 2 * i] = Unpooled.wrappedBuffer(contents.asReadOnlyByteBuffer());
    }
    return Unpooled.wrappedBuffer(parts.length, parts);
  }

  /** {@link GRPCInferenceServiceGrpcService#ModelInfer} with the codecs above. */
  static final ServiceMethod<ModelInferRequest, ModelInferResponse> MODEL_INFER = ServiceMethod.server(
      GRPCInferenceServiceGrpcService.ModelInfer.serviceName(), GRPCInferenceServiceGrpcService.ModelInfer.methodName(),
      ENCODER, DECODER);

  private GrpcWire() {
  }
}
