package io.kiln.gateway.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.InferenceException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The mapping of a region lives exactly as long as its registration or its last lease, whichever ends later, read
 * from the process's own memory map ({@code /proc/self/maps}): unregistering while a copy holds the region leaves
 * that copy a valid mapping, and the mapping goes once the copy is done.
 */
class SharedMemoryRegionsTest {

  private final SharedMemoryRegions regions = new SharedMemoryRegions(SharedMemoryRegions.DEFAULT_DIR, 1 << 20);
  private Path object;
  private String key;

  @BeforeEach
  void create() throws IOException {
    key = "kiln-test-" + UUID.randomUUID();
    object = SharedMemoryRegions.DEFAULT_DIR.resolve(key);
    try (FileChannel ch = FileChannel.open(object, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}), 0);
    }
  }

  @AfterEach
  void delete() throws IOException {
    regions.close();
    Files.deleteIfExists(object);
  }

  private boolean mapped() throws IOException {
    return Files.readAllLines(Path.of("/proc/self/maps")).stream().anyMatch(l -> l.endsWith("/dev/shm/" + key));
  }

  @Test
  void unregisteringWhileALeaseHoldsTheRegionUnmapsItOnlyWhenTheLeaseCloses() throws IOException {
    regions.register("r", "/" + key, 0, 8);
    assertThat(mapped()).isTrue();
    SharedMemoryRegions.Lease lease = regions.lease("r", 2, 4, "inputs[0].parameters");
    regions.unregister("r");
    assertThat(regions.status()).isEmpty();
    assertThat(mapped()).as("a copy still holds it").isTrue();
    assertThat(lease.read()).containsExactly(3, 4, 5, 6);
    lease.close();
    lease.close(); // idempotent: the count never goes below zero
    assertThat(mapped()).isFalse();
    assertThatThrownBy(() -> regions.lease("r", 0, 1, "outputs[0].parameters"))
        .isInstanceOf(InferenceException.class)
        .hasMessage("outputs[0].parameters.shared_memory_region: no shared-memory region 'r' is registered");
  }

  @Test
  void unregisteringAnIdleRegionUnmapsItAtOnceAndTheNameCanBeUsedAgain() throws IOException {
    regions.register("r", key, 0, 8); // a key without the leading '/' names the same object
    regions.unregister("r");
    assertThat(mapped()).isFalse();
    regions.register("r", "/" + key, 4, 4);
    try (SharedMemoryRegions.Lease lease = regions.lease("r", 0, 4, "p")) {
      lease.write(new byte[] {9, 9});
      assertThat(lease.read()).containsExactly(9, 9, 7, 8);
    }
    assertThat(Files.readAllBytes(object)).containsExactly(1, 2, 3, 4, 9, 9, 7, 8);
  }

  @Test
  void aSymbolicLinkIsNotASharedMemoryObject() throws IOException {
    Path link = SharedMemoryRegions.DEFAULT_DIR.resolve(key + "-link");
    Files.createSymbolicLink(link, object);
    try {
      assertThatThrownBy(() -> regions.register("l", "/" + key + "-link", 0, 8))
          .hasMessage("key: '/" + key + "-link' is not a shared-memory object");
    } finally {
      Files.delete(link);
    }
  }
}
