package io.kiln.deploy.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * {@code ./run-tests} runs runtime's, pipelines' and deploy's tests from {@code runtime/lanes}, {@code pipelines/lanes}
 * and {@code deploy/lanes} (the root pom's suite profile): those modules must give the tests the class path the modules
 * themselves give them, the module and then its test-scope dependencies in the same order with the same exclusions, and
 * the process tests that the "tests" lane takes must exist.
 */
class SuiteLanesTest {

  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

  @Test
  void runtimesLaneHasRuntimesTestClassPath() throws Exception {
    assertThat(laneDependencies("runtime/lanes/pom.xml", "kiln-runtime"))
        .isEqualTo(testDependencies("runtime/pom.xml"));
  }

  @Test
  void pipelinesLaneHasPipelinesTestClassPath() throws Exception {
    assertThat(laneDependencies("pipelines/lanes/pom.xml", "kiln-pipelines"))
        .isEqualTo(testDependencies("pipelines/pom.xml"));
  }

  @Test
  void deploysLanesHaveDeploysTestClassPath() throws Exception {
    assertThat(laneDependencies("deploy/lanes/pom.xml", "kiln-deploy")).isEqualTo(testDependencies("deploy/pom.xml"));
  }

  @Test
  void theProcessTestsOfTheTestsLaneExist() throws Exception {
    List<String> patterns = Files.readAllLines(ROOT.resolve("deploy/lanes/its-in-tests-lane.txt")).stream()
        .map(String::strip).filter(l -> !l.isEmpty() && !l.startsWith("#")).toList();
    assertThat(patterns).isNotEmpty().allSatisfy(p -> assertThat(p).matches("\\*\\*/\\w+IT\\.java"));
    List<String> sources;
    try (Stream<Path> files = Files.walk(ROOT.resolve("deploy/src/test/java"))) {
      sources = files.map(f -> f.getFileName().toString()).toList();
    }
    assertThat(sources).containsAll(patterns.stream().map(p -> p.substring(3)).toList());
  }

  // groupId:artifactId:type, then the exclusions, of each test-scope dependency, in order.
  private static List<String> testDependencies(String pom) throws Exception {
    return dependencies(pom).stream().filter(d -> "test".equals(child(d, "scope"))).map(SuiteLanesTest::describe)
        .toList();
  }

  private static List<String> laneDependencies(String pom, String module) throws Exception {
    List<Element> all = dependencies(pom);
    assertThat(all).isNotEmpty();
    assertThat(child(all.get(0), "artifactId")).as("the first dependency of %s", pom).isEqualTo(module);
    return all.subList(1, all.size()).stream().map(SuiteLanesTest::describe).toList();
  }

  private static List<Element> dependencies(String pom) throws Exception {
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    Element project = f.newDocumentBuilder().parse(ROOT.resolve(pom).toFile()).getDocumentElement();
    List<Element> out = new ArrayList<>();
    for (Element deps : children(project, "dependencies")) { // the project's own, not a profile's or management's
      out.addAll(children(deps, "dependency"));
    }
    return out;
  }

  private static String describe(Element d) {
    StringBuilder s = new StringBuilder(child(d, "groupId") + ":" + child(d, "artifactId") + ":"
        + (child(d, "type") == null ? "jar" : child(d, "type")));
    for (Element exclusions : children(d, "exclusions")) {
      for (Element e : children(exclusions, "exclusion")) {
        s.append(" -").append(child(e, "groupId")).append(':').append(child(e, "artifactId"));
      }
    }
    return s.toString();
  }

  private static List<Element> children(Element parent, String name) {
    List<Element> out = new ArrayList<>();
    NodeList nodes = parent.getChildNodes();
    for (int i = 0; i < nodes.getLength(); i++) {
      Node n = nodes.item(i);
      if (n instanceof Element e && e.getTagName().equals(name)) {
        out.add(e);
      }
    }
    return out;
  }

  private static String child(Element parent, String name) {
    List<Element> c = children(parent, name);
    return c.isEmpty() ? null : c.get(0).getTextContent().strip();
  }
}
