package io.kiln.deploy.architecture;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import com.tngtech.archunit.lang.syntax.ArchRuleDefinition;
import java.util.List;
import java.util.Optional;

/**
 * The rule behind {@link ModuleBoundariesTest}: a Kiln module's {@code impl} packages are its own. A module
 * is the package segment after {@code io.kiln.} ({@code runtime}, {@code pools}, {@code serve}, ...), so a
 * new top-level module is covered without editing the rule; an {@code impl} package is any package of a
 * module with an {@code impl} segment below the module's root ({@code io.kiln.pipelines.impl},
 * {@code io.kiln.runtime.impl.cluster}). And the gateway is the data plane ({@link #dataPlane}).
 */
final class ModuleBoundaries {

  private ModuleBoundaries() {
  }

  /** The module a package belongs to, if it is a Kiln package. */
  static Optional<String> module(String packageName) {
    List<String> segments = List.of(packageName.split("\\."));
    if (segments.size() < 3 || !segments.get(0).equals("io") || !segments.get(1).equals("kiln")) {
      return Optional.empty();
    }
    // Each engine is a module of its own (engines/<name>, package io.kiln.engines.<name>).
    if (segments.get(2).equals("engines") && segments.size() > 3) {
      return Optional.of("engines." + segments.get(3));
    }
    return Optional.of(segments.get(2));
  }

  /** Whether a package is implementation of its module (an {@code impl} segment below {@code io.kiln.<module>}). */
  static boolean isImpl(String packageName) {
    List<String> segments = List.of(packageName.split("\\."));
    return module(packageName).isPresent() && segments.subList(3, segments.size()).contains("impl");
  }

  static final ArchRule NO_MODULE_USES_ANOTHER_MODULES_IMPL = ArchRuleDefinition.classes()
      .that(kilnClasses())
      .should(new ArchCondition<JavaClass>("use no other Kiln module's impl packages") {
        @Override
        public void check(JavaClass origin, ConditionEvents events) {
          String from = module(origin.getPackageName()).orElseThrow();
          for (Dependency d : origin.getDirectDependenciesFromSelf()) {
            String pkg = d.getTargetClass().getBaseComponentType().getPackageName();
            if (isImpl(pkg) && !module(pkg).orElseThrow().equals(from)) {
              events.add(SimpleConditionEvent.violated(d, d.getDescription()));
            }
          }
        }
      })
      .because("a module's impl packages may change at any time; other modules use its API and SPI packages");

  /**
   * The data plane keeps to inference: no class in {@code packages} uses {@code serve} or {@code pipelines}
   * (deployments, pipelines and jobs are the control plane's, {@code io.kiln.control}, which mounts its APIs on the
   * gateway's servers). Applied to the gateway; a canary applies it to the control plane, which must fail it.
   */
  static ArchRule dataPlane(String packages) {
    return ArchRuleDefinition.noClasses().that().resideInAPackage(packages)
        .should().dependOnClassesThat().resideInAnyPackage("io.kiln.serve..", "io.kiln.pipelines..")
        .because("the gateway is the data plane; the management, pipelines, jobs, repository, dashboard and logs APIs"
            + " are the control plane's (io.kiln.control)");
  }

  static final ArchRule THE_GATEWAY_IS_THE_DATA_PLANE = dataPlane("io.kiln.gateway..");

  private static DescribedPredicate<JavaClass> kilnClasses() {
    return DescribedPredicate.describe("are Kiln classes", c -> module(c.getPackageName()).isPresent());
  }
}
