package io.kiln.loadtest;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.WireFormat;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * An independent decoder of KServe {@code ModelInferRequest} (field numbers typed from
 * grpc_predict_v2.proto again, not shared with the encoder), accepting packed and unpacked shapes.
 */
record DecodedInferRequest(String model, String version, List<Input> inputs, List<byte[]> raw) {

  record Input(String name, String datatype, List<Long> shape) {
  }

  static DecodedInferRequest decode(byte[] bytes) throws IOException {
    CodedInputStream in = CodedInputStream.newInstance(bytes);
    String model = "";
    String version = "";
    List<Input> inputs = new ArrayList<>();
    List<byte[]> raw = new ArrayList<>();
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      switch (WireFormat.getTagFieldNumber(tag)) {
        case 1 -> model = in.readString();
        case 2 -> version = in.readString();
        case 5 -> inputs.add(decodeInput(in.readByteArray()));
        case 7 -> raw.add(in.readByteArray());
        default -> in.skipField(tag);
      }
    }
    return new DecodedInferRequest(model, version, inputs, raw);
  }

  private static Input decodeInput(byte[] bytes) throws IOException {
    CodedInputStream in = CodedInputStream.newInstance(bytes);
    String name = "";
    String datatype = "";
    List<Long> shape = new ArrayList<>();
    for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
      switch (WireFormat.getTagFieldNumber(tag)) {
        case 1 -> name = in.readString();
        case 2 -> datatype = in.readString();
        case 3 -> {
          if (WireFormat.getTagWireType(tag) == WireFormat.WIRETYPE_LENGTH_DELIMITED) {
            int limit = in.pushLimit(in.readRawVarint32());
            while (in.getBytesUntilLimit() > 0) {
              shape.add(in.readInt64());
            }
            in.popLimit(limit);
          } else {
            shape.add(in.readInt64());
          }
        }
        default -> in.skipField(tag);
      }
    }
    return new Input(name, datatype, shape);
  }
}
