package io.kiln.gateway.support;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * The figures of a scenario made of checks rather than traffic (TLS, say): every test of the class is one check,
 * counted as passed or failed, and the tests may add figures they measured; written as {@link Figures} after the
 * class. Register it with {@code @RegisterExtension static final CheckFigures FIGURES = new CheckFigures("name")}.
 */
public final class CheckFigures implements TestWatcher, AfterAllCallback {

  private final String scenario;
  private final Map<String, String> checks = new LinkedHashMap<>();
  private final Map<String, Object> measured = new LinkedHashMap<>();

  public CheckFigures(String scenario) {
    this.scenario = scenario;
  }

  /** A figure one of the checks measured. */
  public synchronized void put(String key, Object value) {
    measured.put(key, value);
  }

  @Override
  public synchronized void testSuccessful(ExtensionContext context) {
    checks.put(context.getRequiredTestMethod().getName(), "passed");
  }

  @Override
  public synchronized void testFailed(ExtensionContext context, Throwable cause) {
    checks.put(context.getRequiredTestMethod().getName(), "failed");
  }

  @Override
  public synchronized void testAborted(ExtensionContext context, Throwable cause) {
    checks.put(context.getRequiredTestMethod().getName(), "aborted");
  }

  @Override
  public synchronized void testDisabled(ExtensionContext context, Optional<String> reason) {
    checks.put(context.getRequiredTestMethod().getName(), "disabled");
  }

  @Override
  public synchronized void afterAll(ExtensionContext context) {
    long passed = checks.values().stream().filter("passed"::equals).count();
    Figures f = new Figures(scenario).put("checks", checks.size()).put("passed", passed)
        .put("notPassed", checks.size() - passed).put("byCheck", checks);
    measured.forEach(f::put);
    f.write();
  }
}
