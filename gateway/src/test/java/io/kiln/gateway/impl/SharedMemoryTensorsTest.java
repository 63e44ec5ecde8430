package io.kiln.gateway.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.buffer.BufferInternal;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Whether a JSON body may name a shared-memory region (then it is decoded off the event loop), on every kind of
 * buffer Vert.x may hand the gateway: its own heap buffers, a slice of a larger array (an offset into it), a direct
 * buffer and a composite one (no array: read through a copy).
 */
class SharedMemoryTensorsTest {

  private static final String NAMED = "{\"inputs\": [{\"name\": \"x\", \"parameters\": {\"shared_memory_region\": \"r\"}}]}";
  private static final String PLAIN = "{\"inputs\": [{\"name\": \"x\", \"data\": [1, 2, 3]}]}";

  @Test
  void aHeapBodyThatNamesARegionAnywhereIsFoundAndOneThatDoesNotIsNot() {
    assertThat(SharedMemoryTensors.mayReference(Buffer.buffer(NAMED))).isTrue();
    assertThat(SharedMemoryTensors.mayReference(Buffer.buffer(PLAIN))).isFalse();
    assertThat(SharedMemoryTensors.mayReference(Buffer.buffer("shared_memory_region"))).isTrue();
    assertThat(SharedMemoryTensors.mayReference(Buffer.buffer("{} shared_memory_region"))).isTrue();
    assertThat(SharedMemoryTensors.mayReference(Buffer.buffer("{} shared_memory_regio"))).isFalse();
    assertThat(SharedMemoryTensors.mayReference(Buffer.buffer("shared_memory_rEgion"))).isFalse();
    assertThat(SharedMemoryTensors.mayReference(Buffer.buffer(""))).isFalse();
    assertThat(SharedMemoryTensors.mayReference((Buffer) null)).isFalse();
  }

  @Test
  void aSliceIsReadFromItsOwnOffsetToItsOwnEnd() {
    byte[] around = ("shared_memory_region" + PLAIN + "shared_memory_region").getBytes(StandardCharsets.US_ASCII);
    ByteBuf slice = Unpooled.wrappedBuffer(around, 20, PLAIN.length());
    assertThat(slice.hasArray()).isTrue();
    assertThat(slice.arrayOffset() + slice.readerIndex()).isEqualTo(20);
    assertThat(SharedMemoryTensors.mayReference(BufferInternal.buffer(slice))).isFalse();
    assertThat(SharedMemoryTensors.mayReference(BufferInternal.buffer(Unpooled.wrappedBuffer(around, 1, 40))))
        .isFalse();
    assertThat(SharedMemoryTensors.mayReference(BufferInternal.buffer(Unpooled.wrappedBuffer(around, 0, 20))))
        .isTrue();
  }

  @Test
  void directAndCompositeBuffersAreReadThroughACopy() {
    ByteBuf direct = Unpooled.directBuffer().writeBytes(NAMED.getBytes(StandardCharsets.US_ASCII));
    assertThat(direct.hasArray()).isFalse();
    assertThat(SharedMemoryTensors.mayReference(BufferInternal.buffer(direct))).isTrue();
    byte[] named = NAMED.getBytes(StandardCharsets.US_ASCII);
    int cut = NAMED.indexOf("memory"); // the name split across the composite's two parts
    ByteBuf composite = Unpooled.wrappedBuffer(Unpooled.wrappedBuffer(named, 0, cut),
        Unpooled.wrappedBuffer(named, cut, named.length - cut));
    assertThat(composite.hasArray()).isFalse();
    assertThat(SharedMemoryTensors.mayReference(BufferInternal.buffer(composite))).isTrue();
    assertThat(SharedMemoryTensors.mayReference(BufferInternal.buffer(
        Unpooled.directBuffer().writeBytes(PLAIN.getBytes(StandardCharsets.US_ASCII))))).isFalse();
  }
}
