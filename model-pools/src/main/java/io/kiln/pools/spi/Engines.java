package io.kiln.pools.spi;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;

/**
 * The engines a class loader sees through {@link ServiceLoader}, loaded once: Kiln's own jars' first, in the order
 * {@link #FIRST} (PyTorch, OnnxRuntime, Python, Builtin), then every other in the order the loader lists them.
 * Immutable and thread-safe.
 *
 * <p>{@link #installed()} is the registry of the JVM, over model-pools' own class loader: what specs, workers and
 * serve's YAML reader use. A third-party engine is added by putting its jar (its class and a
 * {@code META-INF/services/io.kiln.pools.spi.Engine} file naming it) on the class path.
 */
public final class Engines {

  /**
   * The engines listed first, in this order, whichever are installed: each is a jar of its own, so the class path
   * would otherwise decide the order of every message that lists the engines.
   */
  public static final List<String> FIRST = List.of("PyTorch", "OnnxRuntime", "Python", "Builtin");

  private final List<Engine> all;
  private final Map<String, Engine> byName;

  private Engines(List<Engine> engines) {
    Map<String, Engine> names = new LinkedHashMap<>();
    for (Engine e : engines) {
      String name = e.name();
      if (name == null || name.isBlank() || !name.strip().equals(name)) {
        throw new IllegalStateException("engine " + e.getClass().getName() + " has no usable name: '" + name + "'");
      }
      Engine clash = names.values().stream().filter(o -> o.name().equalsIgnoreCase(name)).findFirst().orElse(null);
      if (clash != null) {
        throw new IllegalStateException("two engines are named '" + name + "': " + clash.getClass().getName()
            + " and " + e.getClass().getName() + " (engine names are matched ignoring case); remove one of their"
            + " jars from the class path");
      }
      names.put(name, e);
    }
    this.all = List.copyOf(engines);
    this.byName = Map.copyOf(names);
  }

  /** The JVM's registry (see the class comment); loaded on first use. */
  public static Engines installed() {
    return Installed.ENGINES;
  }

  /**
   * The engines {@code loader} sees.
   *
   * @throws IllegalStateException when two share a name, or a provider cannot be instantiated
   */
  public static Engines load(ClassLoader loader) {
    List<Engine> engines = new ArrayList<>();
    try {
      ServiceLoader.load(Engine.class, loader).forEach(engines::add);
    } catch (ServiceConfigurationError e) {
      throw new IllegalStateException("an engine on the class path cannot be loaded: " + e.getMessage(), e);
    }
    engines.sort(Comparator.comparingInt(e -> { // stable: the others keep the loader's order
      int i = FIRST.indexOf(e.name());
      return i < 0 ? FIRST.size() : i;
    }));
    return new Engines(engines);
  }

  /** Every engine, in registry order. */
  public List<Engine> all() {
    return all;
  }

  /** Every engine's name, in registry order. */
  public List<String> names() {
    return all.stream().map(Engine::name).toList();
  }

  /** The engine spelled exactly {@code name}, or empty. */
  public Optional<Engine> find(String name) {
    return Optional.ofNullable(name == null ? null : byName.get(name));
  }

  /** The engine {@code name} names, ignoring case and surrounding blanks, or empty. */
  public Optional<Engine> findIgnoringCase(String name) {
    if (name == null) {
      return Optional.empty();
    }
    String n = name.trim();
    return all.stream().filter(e -> e.name().equalsIgnoreCase(n)).findFirst();
  }

  /**
   * The engine spelled exactly {@code name}.
   *
   * @throws IllegalArgumentException naming the engines there are, for a name none has
   */
  public Engine get(String name) {
    return find(name).orElseThrow(() -> new IllegalArgumentException(unknown(name)));
  }

  /** The message for an engine name none has: {@code unknown engine 'X', expected one of A, B}. */
  public String unknown(String name) {
    return "unknown engine '" + name + "', expected one of " + String.join(", ", names());
  }

  /** Lazy holder: the class path is scanned once, on first use. */
  private static final class Installed {
    static final Engines ENGINES = load(Engines.class.getClassLoader());
  }
}
