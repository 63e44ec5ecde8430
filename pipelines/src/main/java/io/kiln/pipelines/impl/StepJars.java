package io.kiln.pipelines.impl;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The class loader of user step jars: every {@code *.jar} of a folder, over the application's classes. */
public final class StepJars {

  private StepJars() {
  }

  /** {@code parent} itself when the folder does not exist or holds no jar. Lists the folder (blocking, brief). */
  public static ClassLoader loader(Path dir, ClassLoader parent) {
    if (!Files.isDirectory(dir)) {
      return parent;
    }
    List<URL> jars = new ArrayList<>();
    try (DirectoryStream<Path> s = Files.newDirectoryStream(dir, "*.jar")) {
      for (Path p : s) {
        jars.add(p.toUri().toURL());
      }
    } catch (MalformedURLException e) {
      throw new IllegalArgumentException("cannot load step jars from " + dir, e);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list step jars in " + dir, e);
    }
    jars.sort(java.util.Comparator.comparing(URL::toString));
    return jars.isEmpty() ? parent : new URLClassLoader("kiln-steps", jars.toArray(URL[]::new), parent);
  }
}
