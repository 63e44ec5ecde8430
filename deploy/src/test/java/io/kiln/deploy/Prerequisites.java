package io.kiln.deploy;

import org.junit.jupiter.api.Assumptions;

/**
 * What a test needs from the machine (network namespaces, a writable memory cgroup): where CI runs as root
 * ({@code CI=true}, uid 0) the machine provides it, so a missing prerequisite there is a failure of the set-up,
 * never a silent skip; elsewhere (a developer's unprivileged shell) the test is skipped with the reason.
 */
public final class Prerequisites {

  private Prerequisites() {
  }

  /** Whether this run must have every prerequisite: CI as root. */
  public static boolean required() {
    return "true".equalsIgnoreCase(System.getenv("CI")) && "root".equals(System.getProperty("user.name"));
  }

  /**
   * Skips the test ({@code required()} false) or fails it ({@code required()} true) unless {@code why} is null.
   *
   * @param why what is missing, or null when the test can run
   */
  public static void need(String test, String why) {
    if (why == null) {
      return;
    }
    if (required()) {
      throw new AssertionError(test + " cannot run, and CI as root must run it: " + why);
    }
    Assumptions.abort(test + " skipped: " + why);
  }
}
