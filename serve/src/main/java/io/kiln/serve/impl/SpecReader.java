package io.kiln.serve.impl;

import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.pools.BatchingSpec;
import io.kiln.pools.HealthSpec;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.QueueSpec;
import io.kiln.serve.AutoscalingSpec;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.PoolPlacement;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;

/**
 * Reads deployment specs from a positioned node tree, reporting every problem it finds and building specs
 * only when a deployment has none. Not thread-safe: one instance per document.
 */
public final class SpecReader {

  /**
   * How to treat model URIs.
   *
   * @param baseDir folder that relative model paths are resolved against (the YAML file's), or null to
   *     keep them as written
   * @param checkModelPaths whether a PyTorch model folder must exist
   * @param deployed the deployment of a name as it runs now (none when not deployed): a spec changing what its
   *     running version's pools were created with, under the same version, is a problem ({@link SpecChanges})
   */
  public record Options(Path baseDir, boolean checkModelPaths, Function<String, Optional<DeploymentSpec>> deployed) {

    public Options {
      Objects.requireNonNull(deployed, "deployed");
    }

    /** Without a running state to compare with. */
    public Options(Path baseDir, boolean checkModelPaths) {
      this(baseDir, checkModelPaths, name -> Optional.empty());
    }
  }

  /** Top-level fields starting with this are ignored, so they can hold YAML anchors ({@code x-defaults: &d}). */
  public static final String EXTENSION_PREFIX = "x-";

  /** The top-level section of pipelines beside the deployments (see {@code io.kiln.pipelines}). */
  public static final String PIPELINES = "pipelines";

  /** The top-level section of model graphs beside the deployments ({@link GraphReader}, through the loaders). */
  public static final String GRAPHS = "graphs";

  /** Deployments per file at most: more is a generated file gone wrong. */
  public static final int MAX_DEPLOYMENTS = 1000;

  private final Reading reading;
  private final Problems problems;
  private final Options options;
  private final Map<String, String> seenIds = new HashMap<>();

  public SpecReader(Problems problems, Options options) {
    this.reading = new Reading(problems);
    this.problems = problems;
    this.options = options;
  }

  /**
   * The deployments of a file whose root is {@code {deployments: [...]}}; complete only if no problem was
   * reported.
   */
  public List<DeploymentSpec> readFile(Node root) {
    List<DeploymentSpec> specs = new ArrayList<>();
    if (root == null) {
      problems.at(1, 1, "", "the document is empty; expected a mapping with a 'deployments' list");
      return specs;
    }
    if (!(root instanceof MappingNode)) {
      problems.at(root, "", "the top level must be a mapping with a 'deployments' list, got "
          + Reading.describe(root));
      return specs;
    }
    MappingReader top = reading.mapping(root, "");
    List<Node> items = top.list("deployments", true);
    top.value(PIPELINES); // read by io.kiln.pipelines.PipelineLoader, with the same problems
    top.value(GRAPHS); // read by GraphReader (DeploymentLoader.readGraphs), with the same problems
    // Extension fields, as in Compose files: a place for anchors of shared settings.
    top.ignorePrefix(EXTENSION_PREFIX);
    top.finish();
    if (items == null) {
      return specs;
    }
    if (items.isEmpty()) {
      problems.at(top.at("deployments"), "deployments", "declare at least one deployment");
    } else if (items.size() > MAX_DEPLOYMENTS) {
      problems.at(top.at("deployments"), "deployments",
          items.size() + " deployments; at most " + MAX_DEPLOYMENTS + " per file");
      return specs;
    }
    for (int i = 0; i < items.size(); i++) {
      DeploymentSpec spec = readDeployment(items.get(i), "deployments[" + i + "]");
      if (spec != null) {
        specs.add(spec);
      }
    }
    return specs;
  }

  /** One deployment, or null if anything in it is wrong (reported). */
  public DeploymentSpec readDeployment(Node node, String path) {
    int before = problems.count();
    MappingReader m = reading.mapping(node, path);
    if (!m.valid()) {
      return null;
    }
    String name = checked(m, "name", m.requiredText("name"), Rules::name);
    String version = checked(m, "version", m.requiredText("version"), Rules::version);
    if (name != null && version != null) {
      String first = seenIds.putIfAbsent(name + "@" + version, path);
      if (first != null) {
        problems.at(m.at("name"), m.path("name"), "duplicate deployment " + name + "@" + version
            + " (also " + first + "); change the name or the version");
      }
    }
    QueueSpec queue = queue(m.section("queue"));
    BatchingSpec batching = batching(m.section("batching"), queue);
    MappingReader auto = m.section("autoscaling");
    Optional<AutoscalingSpec> autoscaling = autoscaling(auto);
    HealthSpec health = health(m.section("health"));
    Node repositoryNode = m.value("repository");
    io.kiln.pools.ModelRepository repository = null;
    Node modelNode = repositoryNode == null ? m.required("model") : m.value("model");
    if (repositoryNode != null) {
      if (modelNode != null) {
        problems.at(m.keyAt("model"), m.path("model"), "a deployment has either 'model' (one model) or 'repository'"
            + " (many, loaded on demand), not both");
        modelNode = null;
      }
      repository = new RepositoryReader(reading, options).read(reading.mapping(repositoryNode, m.path("repository")),
          batching == null ? null : batching.maxBatchSize());
    }
    ModelSpec model = null;
    if (modelNode != null) {
      model = new ModelReader(reading, options).read(reading.mapping(modelNode, m.path("model")),
          batching == null ? null : batching.maxBatchSize());
    }
    PoolPlacement pool = new PoolReader(reading).read(m.section("pool"), autoscaling);
    MappingReader sequenceSection = m.section("sequence");
    SequenceReader sequenceReader = new SequenceReader(reading);
    io.kiln.pools.SequenceSpec sequence = sequenceReader.read(sequenceSection);
    if (sequence != null && repository != null) {
      problems.at(m.keyAt("sequence"), m.path("sequence"), "a multiplexed deployment ('repository') cannot keep"
          + " sequences; give the stateful model a deployment of its own");
    } else if (sequence != null && model != null) {
      model = sequenceReader.attach(model, sequence, sequenceSection);
    }
    m.finish();

    if (pool != null && autoscaling != null && autoscaling.isPresent()
        && pool.workers() instanceof PoolPlacement.PerNode perNode) {
      check(auto.at("min_workers"), auto.path("min_workers"),
          Rules.workersCoverMin(autoscaling.get().minWorkers(), perNode.count()));
    }
    if (problems.count() > before) {
      return null;
    }
    DeploymentSpec spec;
    try {
      spec = repository != null
          ? DeploymentSpec.multiplexed(name, version, repository, pool, batching, queue, autoscaling, health)
          : new DeploymentSpec(name, version, model, pool, batching, queue, autoscaling, health);
    } catch (IllegalArgumentException e) {
      // The reader checks every rule the records do; reaching this is a bug in one of them.
      problems.at(node, path, "invalid deployment: " + e.getMessage());
      return null;
    }
    String refused = SpecChanges.refusal(options.deployed().apply(name).orElse(null), spec);
    return check(m.at("version"), m.path("version"), refused) ? spec : null;
  }

  private QueueSpec queue(MappingReader q) {
    Integer maxQueued = q.integer("max_queued", QueueSpec.DEFAULT_MAX_QUEUED, 1, QueueSpec.MAX_QUEUED);
    Duration timeout = q.millis("timeout_ms", QueueSpec.DEFAULT_TIMEOUT, true);
    q.finish();
    return maxQueued == null || timeout == null ? null : new QueueSpec(maxQueued, timeout);
  }

  private BatchingSpec batching(MappingReader b, QueueSpec queue) {
    Integer size = b.integer("max_batch_size", BatchingSpec.DEFAULT_MAX_BATCH_SIZE, 1, BatchingSpec.MAX_BATCH_SIZE);
    Duration delay = b.millis("max_batch_delay_ms", BatchingSpec.DEFAULT_MAX_BATCH_DELAY, false);
    b.finish();
    if (size != null && queue != null
        && !check(b.at("max_batch_size"), b.path("max_batch_size"), Rules.batchWithinQueue(size, queue.maxQueued()))) {
      return null;
    }
    return size == null || delay == null ? null : new BatchingSpec(size, delay);
  }

  /** Empty when absent, null when wrong (reported). */
  private Optional<AutoscalingSpec> autoscaling(MappingReader a) {
    if (!a.present()) {
      return a.valid() ? Optional.empty() : null;
    }
    Integer min = a.integer("min_workers", AutoscalingSpec.DEFAULT_MIN_WORKERS, 0, PoolPlacement.MAX_WORKERS);
    Long max = a.requiredInteger("max_workers", 1, PoolPlacement.MAX_WORKERS);
    BigDecimal target = a.decimal("target_ongoing_per_worker",
        BigDecimal.valueOf(AutoscalingSpec.DEFAULT_TARGET_ONGOING_PER_WORKER), 0, 1_000_000);
    if (target != null && !check(a.at("target_ongoing_per_worker"), a.path("target_ongoing_per_worker"),
        Rules.positive(target.doubleValue()))) {
      target = null;
    }
    Duration up = a.millis("upscale_delay_ms", AutoscalingSpec.DEFAULT_UPSCALE_DELAY, false);
    Duration down = a.millis("downscale_delay_ms", AutoscalingSpec.DEFAULT_DOWNSCALE_DELAY, false);
    a.finish();
    if (min != null && max != null
        && !check(a.at("min_workers"), a.path("min_workers"), Rules.minWithinMax(min, max.intValue()))) {
      return null;
    }
    if (min == null || max == null || target == null || up == null || down == null) {
      return null;
    }
    return Optional.of(new AutoscalingSpec(min, max.intValue(), target.doubleValue(), up, down));
  }

  private HealthSpec health(MappingReader h) {
    Duration period = h.millis("period_ms", HealthSpec.DEFAULT_PERIOD, true);
    // A shorter period without a timeout gets a timeout that fits in it, rather than an error.
    Duration defaultTimeout = period != null && period.compareTo(HealthSpec.DEFAULT_TIMEOUT) < 0
        ? period : HealthSpec.DEFAULT_TIMEOUT;
    Duration timeout = h.millis("timeout_ms", defaultTimeout, true);
    h.finish();
    if (period == null || timeout == null
        || !check(h.at("timeout_ms"), h.path("timeout_ms"), Rules.timeoutWithinPeriod(timeout, period))) {
      return null;
    }
    return new HealthSpec(period, timeout);
  }

  private String checked(MappingReader m, String key, String value, java.util.function.Function<String, String> rule) {
    return value != null && check(m.at(key), m.path(key), rule.apply(value)) ? value : null;
  }

  private boolean check(Node at, String path, String message) {
    if (message != null) {
      problems.at(at, path, message);
      return false;
    }
    return true;
  }
}
