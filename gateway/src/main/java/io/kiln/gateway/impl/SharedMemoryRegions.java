package io.kiln.gateway.impl;

import io.kiln.pools.InferenceException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The system shared-memory regions clients registered (Triton's system shared-memory extension): each a window
 * {@code [offset, offset + byte_size)} of a POSIX shared-memory object {@code <dir>/<key>} ({@code /dev/shm} on
 * Linux), mapped read-write once at registration. Tensors are copied in and out of a region under a {@link Lease},
 * so a region unregistered while a request copies is unmapped only when that copy is done: the mapping is
 * reference-counted (one reference for the registration, one per lease), and unmapping a buffer another thread still
 * reads would crash the JVM.
 *
 * <p>Only a client on the gateway's host can share memory with it: the key names an object in this host's
 * {@code dir}. A key is one name (an optional leading {@code /}, as {@code shm_open} takes it, then no {@code /},
 * no {@code ..}, no NUL); a symbolic link is refused, and the window must lie inside the object as it is (mapping
 * beyond its end would grow it).
 *
 * <p>Thread-safe; every method is non-blocking except {@link #register}, which opens and maps a file (call it off
 * the event loop when that matters; mapping a tmpfs object takes microseconds).
 */
final class SharedMemoryRegions implements AutoCloseable {

  /** The most regions registered at once. */
  static final int MAX_REGIONS = 1024;

  /** Where POSIX shared-memory objects live on Linux. */
  static final Path DEFAULT_DIR = Path.of("/dev/shm");

  private final Path dir;
  private final long maxTensorBytes;
  private final Map<String, Region> regions = new ConcurrentHashMap<>();

  /**
   * @param dir the directory keys name objects in ({@link #DEFAULT_DIR})
   * @param maxTensorBytes the most bytes one input may take from a region (the same limit as a request body)
   */
  SharedMemoryRegions(Path dir, long maxTensorBytes) {
    this.dir = dir;
    this.maxTensorBytes = maxTensorBytes;
  }

  /** A registered region as the status calls report it. */
  record Status(String name, String key, long offset, long byteSize) {
  }

  /**
   * Maps {@code [offset, offset + byteSize)} of the object {@code key} under {@code name}.
   *
   * @throws InferenceException INVALID_INPUT naming the field at fault: a name taken, a bad key, a window outside
   *     the object, an object that cannot be opened; UNAVAILABLE when {@value #MAX_REGIONS} regions are registered
   */
  Status register(String name, String key, long offset, long byteSize) {
    if (name == null || name.isEmpty() || name.length() > 256) {
      throw InferenceException.invalid("name: must be 1 to 256 characters");
    }
    Path file = file(key);
    if (offset < 0) {
      throw InferenceException.invalid("offset: must be >= 0, got " + offset);
    }
    if (byteSize < 1 || byteSize > Integer.MAX_VALUE) {
      throw InferenceException.invalid("byte_size: must be in [1, " + Integer.MAX_VALUE + "], got " + byteSize);
    }
    if (regions.containsKey(name)) {
      throw InferenceException.invalid("name: region '" + name + "' is already registered; unregister it first");
    }
    if (regions.size() >= MAX_REGIONS) {
      throw new InferenceException(InferenceException.Kind.UNAVAILABLE, "already " + MAX_REGIONS
          + " shared-memory regions registered; unregister some first");
    }
    MappedByteBuffer mapped;
    try {
      BasicFileAttributes attrs = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      if (!attrs.isRegularFile()) {
        throw InferenceException.invalid("key: '" + key + "' is not a shared-memory object");
      }
      if (offset > attrs.size() - byteSize) {
        throw InferenceException.invalid("byte_size: offset " + offset + " + byte_size " + byteSize
            + " is beyond the end of '" + key + "' (" + attrs.size() + " bytes)");
      }
      try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE,
          LinkOption.NOFOLLOW_LINKS)) {
        // The size read above may have changed since; a window beyond the end would grow the client's object.
        if (offset > ch.size() - byteSize) {
          throw InferenceException.invalid("byte_size: offset " + offset + " + byte_size " + byteSize
              + " is beyond the end of '" + key + "' (" + ch.size() + " bytes)");
        }
        mapped = ch.map(FileChannel.MapMode.READ_WRITE, offset, byteSize);
      }
    } catch (java.nio.file.NoSuchFileException e) {
      throw InferenceException.invalid("key: no shared-memory object '" + key + "' on this host");
    } catch (IOException | UnsupportedOperationException e) {
      throw InferenceException.invalid("key: cannot map '" + key + "': " + e.getMessage());
    }
    Region region = new Region(new Status(name, key, offset, byteSize), mapped);
    if (regions.putIfAbsent(name, region) != null) {
      region.release();
      throw InferenceException.invalid("name: region '" + name + "' is already registered; unregister it first");
    }
    return region.status;
  }

  /**
   * Unregisters {@code name}; its mapping goes once no copy holds it.
   *
   * @throws InferenceException INVALID_INPUT if no such region is registered
   */
  void unregister(String name) {
    Region region = regions.remove(name);
    if (region == null) {
      throw InferenceException.invalid("name: no shared-memory region '" + name + "' is registered");
    }
    region.release();
  }

  /** Unregisters every region. */
  void unregisterAll() {
    for (String name : List.copyOf(regions.keySet())) {
      Region region = regions.remove(name);
      if (region != null) {
        region.release();
      }
    }
  }

  /** Every registered region, by name. */
  List<Status> status() {
    List<Status> out = new ArrayList<>();
    regions.values().forEach(r -> out.add(r.status));
    out.sort(java.util.Comparator.comparing(Status::name));
    return out;
  }

  /**
   * One region.
   *
   * @throws InferenceException INVALID_INPUT if it is not registered
   */
  Status status(String name) {
    Region region = regions.get(name);
    if (region == null) {
      throw InferenceException.invalid("name: no shared-memory region '" + name + "' is registered");
    }
    return region.status;
  }

  int size() {
    return regions.size();
  }

  /** The most bytes one input may take from a region. */
  long maxTensorBytes() {
    return maxTensorBytes;
  }

  /**
   * The window {@code [offset, offset + byteSize)} of a registered region, held until the lease is closed.
   *
   * @param path names the tensor's parameters in errors (e.g. {@code inputs[0].parameters})
   * @throws InferenceException INVALID_INPUT naming the field: an unknown region, a window outside it
   */
  Lease lease(String name, long offset, long byteSize, String path) {
    Region region = regions.get(name);
    if (region == null || !region.acquire()) {
      throw InferenceException.invalid(path + "." + SharedMemoryTensors.REGION + ": no shared-memory region '" + name
          + "' is registered");
    }
    long size = region.status.byteSize();
    if (offset > size || byteSize > size - offset) {
      region.release();
      throw InferenceException.invalid(path + "." + SharedMemoryTensors.BYTE_SIZE + ": offset " + offset
          + " + byte_size " + byteSize + " is beyond the end of region '" + name + "' (" + size + " bytes)");
    }
    return new Lease(region, (int) offset, (int) byteSize);
  }

  /** Unregisters every region; their mappings go once no copy holds them. */
  @Override
  public void close() {
    unregisterAll();
  }

  /** A window of a region, mapped while held. Not thread-safe: one request's copy at a time. */
  static final class Lease implements AutoCloseable {
    private final Region region;
    private final int offset;
    private final int byteSize;
    private boolean closed;

    private Lease(Region region, int offset, int byteSize) {
      this.region = region;
      this.offset = offset;
      this.byteSize = byteSize;
    }

    int byteSize() {
      return byteSize;
    }

    /** The window's bytes, copied. */
    byte[] read() {
      byte[] out = new byte[byteSize];
      region.mapped.get(offset, out, 0, byteSize);
      return out;
    }

    /** Writes {@code data} at the window's start; the caller checked it fits. */
    void write(byte[] data) {
      region.mapped.put(offset, data, 0, data.length);
    }

    @Override
    public void close() {
      if (!closed) {
        closed = true;
        region.release();
      }
    }
  }

  /** A mapping and its references: the registration's and one per lease. */
  private static final class Region {
    final Status status;
    final MappedByteBuffer mapped;
    private final AtomicInteger refs = new AtomicInteger(1);

    Region(Status status, MappedByteBuffer mapped) {
      this.status = status;
      this.mapped = mapped;
    }

    /** False once the last reference went (the region was unregistered and every lease closed). */
    boolean acquire() {
      int n;
      do {
        n = refs.get();
        if (n == 0) {
          return false;
        }
      } while (!refs.compareAndSet(n, n + 1));
      return true;
    }

    void release() {
      if (refs.decrementAndGet() == 0) {
        unmap(mapped);
      }
    }
  }

  /** Unmaps now rather than at some later GC: a client may unlink and recreate the object at once. */
  private static void unmap(ByteBuffer mapped) {
    io.netty.util.internal.PlatformDependent.freeDirectBuffer(mapped);
  }

  /**
   * The object a key names in {@code dir}.
   *
   * @throws InferenceException INVALID_INPUT naming {@code key}
   */
  Path file(String key) {
    if (key == null || key.isEmpty()) {
      throw InferenceException.invalid("key: must name a shared-memory object");
    }
    String name = key.startsWith("/") ? key.substring(1) : key;
    if (name.isEmpty() || name.length() > 255 || name.contains("/") || name.contains("..") || name.indexOf('\0') >= 0
        || name.equals(".")) {
      throw InferenceException.invalid("key: '" + key + "' must be one name of an object in " + dir
          + " (an optional leading '/', no other '/', no '..')");
    }
    return dir.resolve(name);
  }
}
