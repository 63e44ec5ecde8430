package io.kiln.deploy.reliability;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.jar.JarFile;

/**
 * Reads class files' constant pools (no bytecode library needed) to find what they reference: classes,
 * methods and strings. Enough to prove a class never touches Java's native serialization.
 */
final class ClassScan {

  /** What one class file references. */
  record Refs(String className, Set<String> classes, Set<String> methods, Set<String> utf8) {
  }

  /** Classes whose use means Java native (or XML bean) deserialization. */
  static final Set<String> FORBIDDEN_CLASSES = Set.of("java/io/ObjectInputStream", "java/io/ObjectOutputStream",
      "java/beans/XMLDecoder", "java/beans/XMLEncoder", "java/rmi/server/UnicastRemoteObject");
  /** Methods (owner.name) that deserialize or open polymorphic typing to what the input names. */
  static final Set<String> FORBIDDEN_METHODS = Set.of("java/io/ObjectInputStream.readObject",
      "java/io/ObjectInputStream.readUnshared", "com/fasterxml/jackson/databind/ObjectMapper.activateDefaultTyping",
      "com/fasterxml/jackson/databind/ObjectMapper.enableDefaultTyping",
      "com/fasterxml/jackson/databind/ObjectMapper.activateDefaultTypingAsProperty");

  private ClassScan() {
  }

  /** Why {@code r} is on the serialization path, or an empty list. */
  static List<String> violations(Refs r) {
    List<String> out = new ArrayList<>();
    for (String c : r.classes()) {
      if (FORBIDDEN_CLASSES.contains(c)) {
        out.add(r.className() + " references " + c);
      }
    }
    for (String m : r.methods()) {
      if (FORBIDDEN_METHODS.contains(m)) {
        out.add(r.className() + " calls " + m);
      }
    }
    if (r.utf8().contains("Lcom/fasterxml/jackson/annotation/JsonTypeInfo$Id;")
        && (r.utf8().contains("CLASS") || r.utf8().contains("MINIMAL_CLASS"))) {
      out.add(r.className() + " lets JSON name a class to instantiate (@JsonTypeInfo(use = CLASS))");
    }
    return out;
  }

  /** Every class file under a classes folder or inside a jar, as {@code Refs}. */
  static List<Refs> scan(Path classesDirOrJar) {
    List<Refs> out = new ArrayList<>();
    try {
      if (Files.isDirectory(classesDirOrJar)) {
        try (var files = Files.walk(classesDirOrJar)) {
          for (Path f : files.filter(p -> p.toString().endsWith(".class")).toList()) {
            try (InputStream in = Files.newInputStream(f)) {
              out.add(read(in.readAllBytes()));
            }
          }
        }
      } else {
        try (JarFile jar = new JarFile(classesDirOrJar.toFile())) {
          for (var e : jar.stream().filter(e -> e.getName().endsWith(".class")).toList()) {
            try (InputStream in = jar.getInputStream(e)) {
              out.add(read(in.readAllBytes()));
            }
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  static Refs read(byte[] bytes) throws IOException {
    DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes));
    if (in.readInt() != 0xCAFEBABE) {
      throw new IOException("not a class file");
    }
    in.readUnsignedShort();
    in.readUnsignedShort();
    int count = in.readUnsignedShort();
    String[] utf8 = new String[count];
    int[] classIndex = new int[count];
    int[][] memberRef = new int[count][];
    int[][] nameAndType = new int[count][];
    for (int i = 1; i < count; i++) {
      int tag = in.readUnsignedByte();
      switch (tag) {
        case 1 -> utf8[i] = in.readUTF();
        case 7 -> classIndex[i] = in.readUnsignedShort();
        case 9, 10, 11 -> memberRef[i] = new int[] {in.readUnsignedShort(), in.readUnsignedShort()};
        case 12 -> nameAndType[i] = new int[] {in.readUnsignedShort(), in.readUnsignedShort()};
        case 8, 16, 19, 20 -> in.readUnsignedShort();
        case 3, 4 -> in.readInt();
        case 5, 6 -> {
          in.readLong();
          i++;
        }
        case 15 -> {
          in.readUnsignedByte();
          in.readUnsignedShort();
        }
        case 17, 18 -> in.readInt();
        default -> throw new IOException("unknown constant tag " + tag);
      }
    }
    in.readUnsignedShort();
    String self = utf8[classIndex[in.readUnsignedShort()]];
    Set<String> classes = new HashSet<>();
    Set<String> methods = new HashSet<>();
    Set<String> strings = new HashSet<>();
    for (int i = 1; i < count; i++) {
      if (classIndex[i] != 0) {
        classes.add(utf8[classIndex[i]]);
      }
      if (utf8[i] != null) {
        strings.add(utf8[i]);
      }
    }
    for (int i = 1; i < count; i++) {
      if (memberRef[i] != null) {
        String owner = utf8[classIndex[memberRef[i][0]]];
        String name = utf8[nameAndType[memberRef[i][1]][0]];
        methods.add(owner + "." + name);
      }
    }
    return new Refs(self, classes, methods, strings);
  }
}
