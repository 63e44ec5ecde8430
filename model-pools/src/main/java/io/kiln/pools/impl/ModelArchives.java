package io.kiln.pools.impl;

import io.kiln.pools.ModelLoadException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;

/**
 * Unpacks a downloaded {@code .zip} or {@code .tar.gz}/{@code .tgz} into a folder. Refuses any entry whose
 * name escapes the folder ({@code ../}, absolute paths), links of any kind, and archives whose files add up
 * to more than a cap (a small archive can inflate to anything).
 */
final class ModelArchives {

  private static final int BLOCK = 512;

  private ModelArchives() {
  }

  static boolean isArchive(String name) {
    return name.endsWith(".zip") || name.endsWith(".tar.gz") || name.endsWith(".tgz");
  }

  /** Unpacks {@code archive} (named {@code name}) into the existing empty folder {@code into}. */
  static void unpack(Path archive, String name, Path into, long maxBytes) throws IOException {
    try (InputStream in = Files.newInputStream(archive)) {
      if (name.endsWith(".zip")) {
        unzip(in, name, into, maxBytes);
      } else {
        untar(new GZIPInputStream(in, 64 * 1024), name, into, maxBytes);
      }
    }
  }

  private static void unzip(InputStream raw, String name, Path into, long maxBytes) throws IOException {
    long total = 0;
    try (ZipInputStream zip = new ZipInputStream(raw)) {
      for (ZipEntry e = zip.getNextEntry(); e != null; e = zip.getNextEntry()) {
        Path target = inside(into, e.getName(), name);
        if (e.isDirectory()) {
          Files.createDirectories(target);
        } else {
          total += copy(zip, target, maxBytes - total, name, maxBytes);
        }
      }
    }
  }

  /** POSIX ustar with GNU long names; pax headers are skipped (their path overrides are not honoured). */
  private static void untar(InputStream in, String name, Path into, long maxBytes) throws IOException {
    long total = 0;
    String longName = null;
    byte[] header = new byte[BLOCK];
    while (true) {
      if (in.readNBytes(header, 0, BLOCK) < BLOCK) {
        throw new ModelLoadException("archive " + name + " is truncated (a tar header is cut short)");
      }
      if (allZero(header)) {
        return;
      }
      String entry = longName != null ? longName : text(header, 0, 100);
      longName = null;
      String prefix = text(header, 345, 155);
      if (!prefix.isEmpty() && entry.equals(text(header, 0, 100))) {
        entry = prefix + "/" + entry;
      }
      long size = octal(header, 124, 12, name);
      char type = (char) header[156];
      long padded = (size + BLOCK - 1) / BLOCK * BLOCK;
      switch (type) {
        case '0', '\0', '7' -> {
          Path target = inside(into, entry, name);
          total += copy(new Bounded(in, size), target, maxBytes - total, name, maxBytes);
          skip(in, padded - size);
        }
        case '5' -> {
          Files.createDirectories(inside(into, entry, name));
          skip(in, padded);
        }
        case 'L' -> {
          if (size > 64 * 1024) {
            throw new ModelLoadException("archive " + name + ": a long name of " + size + " bytes");
          }
          byte[] b = in.readNBytes((int) size);
          longName = new String(b, StandardCharsets.UTF_8).replace("\0", "");
          skip(in, padded - size);
        }
        case 'x', 'g' -> skip(in, padded);
        case '1', '2' -> throw new ModelLoadException("archive " + name + ": entry '" + entry
            + "' is a link, which a model archive may not hold");
        default -> throw new ModelLoadException("archive " + name + ": entry '" + entry + "' has tar type '" + type
            + "', only files and folders are unpacked");
      }
    }
  }

  /** The path of entry {@code entry} under {@code into}, refusing any that would land outside. */
  static Path inside(Path into, String entry, String archive) {
    Path root = into.toAbsolutePath().normalize();
    Path target = root.resolve(entry).normalize();
    if (entry.startsWith("/") || entry.contains("\\") || !target.startsWith(root) || target.equals(root)
        && !entry.replace("/", "").replace(".", "").isEmpty()) {
      throw new ModelLoadException("archive " + archive + ": entry '" + entry + "' escapes the model folder; refused");
    }
    return target;
  }

  private static long copy(InputStream in, Path target, long left, String archive, long maxBytes) throws IOException {
    Files.createDirectories(target.getParent());
    long n = 0;
    byte[] buf = new byte[64 * 1024];
    try (var out = Files.newOutputStream(target)) {
      for (int r = in.read(buf); r >= 0; r = in.read(buf)) {
        n += r;
        if (n > left) {
          throw new ModelLoadException("archive " + archive + " unpacks to more than " + maxBytes
              + " bytes (kiln.model.maxBytes); refused");
        }
        out.write(buf, 0, r);
      }
    }
    return n;
  }

  private static void skip(InputStream in, long n) throws IOException {
    in.skipNBytes(n);
  }

  private static boolean allZero(byte[] b) {
    for (byte x : b) {
      if (x != 0) {
        return false;
      }
    }
    return true;
  }

  private static String text(byte[] b, int off, int len) {
    int end = off;
    while (end < off + len && b[end] != 0) {
      end++;
    }
    return new String(b, off, end - off, StandardCharsets.UTF_8);
  }

  private static long octal(byte[] b, int off, int len, String archive) {
    String t = text(b, off, len).trim();
    if (t.isEmpty()) {
      return 0;
    }
    try {
      return Long.parseLong(t, 8);
    } catch (NumberFormatException e) {
      throw new ModelLoadException("archive " + archive + ": a tar header has size '" + t + "' (not octal)");
    }
  }

  /** The next {@code left} bytes of a stream, not closing it. */
  private static final class Bounded extends InputStream {
    private final InputStream in;
    private long left;

    Bounded(InputStream in, long left) {
      this.in = in;
      this.left = left;
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (left == 0) {
        return -1;
      }
      int r = in.read(b, off, (int) Math.min(len, left));
      if (r < 0) {
        throw new java.io.EOFException("tar entry cut short");
      }
      left -= r;
      return r;
    }
  }
}
