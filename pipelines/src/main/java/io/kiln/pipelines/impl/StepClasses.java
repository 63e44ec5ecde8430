package io.kiln.pipelines.impl;

import io.kiln.pipelines.Step;
import java.lang.reflect.Constructor;
import java.lang.reflect.Modifier;

/**
 * Finds and checks user step classes: on the classpath, implementing {@link Step}, with a public
 * no-argument constructor. Classes are loaded without being initialised until they pass, so naming an
 * arbitrary class in YAML runs none of its code.
 */
@FunctionalInterface
public interface StepClasses {

  /** Accepts every name (where the classes live on other nodes only). */
  StepClasses UNCHECKED = name -> null;

  /** Why {@code className} cannot be a step here, or null if it can. */
  String problem(String className);

  static StepClasses on(ClassLoader loader) {
    return name -> {
      try {
        load(loader, name);
        return null;
      } catch (IllegalArgumentException e) {
        return e.getMessage();
      }
    };
  }

  /**
   * The step class's public no-argument constructor.
   *
   * @throws IllegalArgumentException saying what is wrong with the class
   */
  static Constructor<? extends Step> load(ClassLoader loader, String name) {
    Class<?> c;
    try {
      c = Class.forName(name, false, loader);
    } catch (ClassNotFoundException | LinkageError e) {
      throw new IllegalArgumentException("class " + name + " is not on the classpath (put its jar in the"
          + " steps/ folder of kiln.home on every node)");
    }
    if (!Step.class.isAssignableFrom(c)) {
      throw new IllegalArgumentException("class " + name + " does not implement " + Step.class.getName());
    }
    if (Modifier.isAbstract(c.getModifiers()) || !Modifier.isPublic(c.getModifiers())) {
      throw new IllegalArgumentException("class " + name + " must be public and not abstract");
    }
    try {
      @SuppressWarnings("unchecked")
      Constructor<? extends Step> ctor = (Constructor<? extends Step>) c.getConstructor();
      return ctor;
    } catch (NoSuchMethodException e) {
      throw new IllegalArgumentException("class " + name + " needs a public constructor without arguments");
    }
  }
}
