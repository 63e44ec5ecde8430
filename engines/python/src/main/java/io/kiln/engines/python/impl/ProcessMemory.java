package io.kiln.engines.python.impl;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;

/** A process's resident memory as Linux's {@code /proc/<pid>/status} tells it. */
final class ProcessMemory {

  /** {@code /proc/<pid>/status} is a few kB; a bigger one is not what we expect to read. */
  private static final long MAX_STATUS_BYTES = 64 * 1024;

  private ProcessMemory() {
  }

  /** {@code VmRSS} of process {@code pid} in bytes; empty without {@code /proc} or once the process is gone. */
  static OptionalLong residentBytes(long pid) {
    Path status = Path.of("/proc", Long.toString(pid), "status");
    try {
      if (!Files.isRegularFile(status) || Files.size(status) > MAX_STATUS_BYTES) {
        return OptionalLong.empty();
      }
      for (String line : Files.readAllLines(status)) {
        if (line.startsWith("VmRSS:")) {
          String[] parts = line.substring(6).trim().split("\\s+");
          long kb = Long.parseLong(parts[0]);
          return OptionalLong.of(kb * 1024);
        }
      }
    } catch (IOException | NumberFormatException | ArrayIndexOutOfBoundsException e) {
      return OptionalLong.empty();
    }
    return OptionalLong.empty();
  }
}
