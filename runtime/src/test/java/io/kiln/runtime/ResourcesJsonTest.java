package io.kiln.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.runtime.WireCodec;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Resources inside records that cross nodes (pool specs, worker options) read and write as a plain map. */
class ResourcesJsonTest {

  record Holder(String name, Resources resources, List<Resources> more) {
  }

  @Test
  void jsonIsTheMapOfQuantities() throws Exception {
    Resources r = Resources.gpu(0.5).withCpu(1).with("step_a_slot", 4).withMemory(16L << 30);
    String json = WireCodec.json().writeValueAsString(r);
    assertThat(json).isEqualTo("{\"CPU\":1.0,\"GPU\":0.5,\"memory\":1.7179869184E10,\"step_a_slot\":4.0}");
    assertThat(WireCodec.json().readValue(json, Resources.class)).isEqualTo(r);
    assertThat(WireCodec.json().readValue("{\"CPU\": 2, \"GPU\": 0.25}", Resources.class))
        .isEqualTo(Resources.cpu(2).withGpu(0.25));
  }

  @Test
  void roundTripsInsideRecordsThroughBothWireMappers() throws Exception {
    Holder h = new Holder("w", Resources.cpu(0.0001).with("x", 3), List.of(Resources.NONE, Resources.gpu(2)));
    for (ObjectMapper m : List.of(WireCodec.cbor(), WireCodec.json())) {
      assertThat(m.readValue(m.writeValueAsBytes(h), Holder.class)).isEqualTo(h);
    }
  }

  @Test
  void invalidQuantitiesAreRefusedWhenRead() {
    assertThatThrownBy(() -> WireCodec.json().readValue("{\"GPU\": 1.5}", Resources.class))
        .hasMessageContaining("GPU above 1 must be a whole number");
    assertThatThrownBy(() -> WireCodec.json().readValue("{\"CPU\": -1}", Resources.class))
        .hasMessageContaining("finite non-negative");
  }
}
