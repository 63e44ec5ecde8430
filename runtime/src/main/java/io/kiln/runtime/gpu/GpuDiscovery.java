package io.kiln.runtime.gpu;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Finds a node's NVIDIA GPUs with {@code nvidia-smi} (NVML's command-line face, installed with the driver):
 * {@code nvidia-smi --query-gpu=index,name,memory.total,uuid,driver_version --format=csv,noheader,nounits}
 * for the devices, and the banner of a plain {@code nvidia-smi} for the CUDA version the driver supports.
 *
 * <p>A host without {@code nvidia-smi} has no GPUs, and that is no error. A host whose {@code nvidia-smi}
 * fails, hangs or prints what does not parse has GPUs it cannot use: {@link #discover} throws
 * {@link GpuDiscoveryException} with the tool's own words, so a node never starts pretending to have none.
 *
 * <p>Blocking (runs a process, at most {@code timeout} per call); call it once at node start, off event loops.
 */
public final class GpuDiscovery {

  /** The fields asked of {@code nvidia-smi}, in this order. */
  public static final String QUERY = "index,name,memory.total,uuid,driver_version";
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(15);
  private static final Pattern CUDA_VERSION = Pattern.compile("CUDA Version:\\s*([0-9][0-9.]*)");

  private final String executable;
  private final Duration timeout;

  /**
   * @param executable a path, or a bare name looked up on {@code PATH}
   * @param timeout how long one call of the tool may take
   */
  public GpuDiscovery(String executable, Duration timeout) {
    if (executable == null || executable.isBlank()) {
      throw new IllegalArgumentException("executable must name nvidia-smi, got '" + executable + "'");
    }
    if (timeout == null || timeout.toMillis() < 1) {
      throw new IllegalArgumentException("timeout must be at least 1 ms, got " + timeout);
    }
    this.executable = executable;
    this.timeout = timeout;
  }

  /** {@code nvidia-smi} from {@code PATH}, with the default timeout. */
  public static GpuDiscovery nvidiaSmi() {
    return new GpuDiscovery("nvidia-smi", DEFAULT_TIMEOUT);
  }

  /**
   * The GPUs of this host.
   *
   * @throws GpuDiscoveryException if the tool is there but fails, hangs, or prints what does not parse
   */
  public GpuInventory discover() {
    Optional<Path> tool = locate(executable, System.getenv("PATH"));
    if (tool.isEmpty()) {
      return GpuInventory.none(executable + " not found" + (executable.contains("/") ? "" : " on PATH"));
    }
    String csv = run(tool.get(), List.of("--query-gpu=" + QUERY, "--format=csv,noheader,nounits"));
    Query q = parseQuery(csv);
    String cuda = q.devices().isEmpty() ? "" : parseCudaVersion(run(tool.get(), List.of())).orElse("");
    return new GpuInventory(q.devices(), q.driverVersion(), cuda, tool.get().toString());
  }

  /** The devices and driver version of a {@link #QUERY} answer. */
  public record Query(List<GpuDevice> devices, String driverVersion) {
  }

  /**
   * Parses {@code nvidia-smi --query-gpu=}{@value #QUERY}{@code --format=csv,noheader,nounits} output: one
   * device a line, fields separated by commas (product names may hold spaces, never commas), memory in MiB.
   *
   * @throws GpuDiscoveryException naming the line that does not parse
   */
  public static Query parseQuery(String csv) {
    List<GpuDevice> devices = new ArrayList<>();
    String driver = "";
    int lineNo = 0;
    for (String line : csv.split("\\R")) {
      lineNo++;
      if (line.isBlank()) {
        continue;
      }
      String[] f = line.split(",", -1);
      if (f.length != 5) {
        throw new GpuDiscoveryException("nvidia-smi line " + lineNo + " has " + f.length + " fields, expected 5 ("
            + QUERY + "): '" + line.strip() + "'");
      }
      try {
        int index = Integer.parseInt(f[0].strip());
        long mib = Long.parseLong(f[2].strip());
        devices.add(new GpuDevice(index, f[1].strip(), mib << 20, notAvailable(f[3].strip()) ? "" : f[3].strip()));
      } catch (IllegalArgumentException e) {
        throw new GpuDiscoveryException("nvidia-smi line " + lineNo + " does not parse (" + e.getMessage() + "): '"
            + line.strip() + "'", e);
      }
      if (!notAvailable(f[4].strip())) {
        driver = f[4].strip();
      }
    }
    devices.sort(java.util.Comparator.comparingInt(GpuDevice::index));
    for (int i = 1; i < devices.size(); i++) {
      if (devices.get(i).index() == devices.get(i - 1).index()) {
        throw new GpuDiscoveryException("nvidia-smi reports GPU index " + devices.get(i).index() + " twice");
      }
    }
    return new Query(devices, driver);
  }

  /** The {@code CUDA Version: X.Y} of {@code nvidia-smi}'s banner, if it shows one. */
  public static Optional<String> parseCudaVersion(String banner) {
    Matcher m = CUDA_VERSION.matcher(banner);
    return m.find() ? Optional.of(m.group(1)) : Optional.empty();
  }

  private static boolean notAvailable(String field) {
    return SmiProcess.notAvailable(field);
  }

  /** {@code name} as a path if it holds a slash, else the first executable of that name on {@code path}. */
  static Optional<Path> locate(String name, String path) {
    if (name.contains("/")) {
      Path p = Path.of(name);
      return Files.isExecutable(p) ? Optional.of(p) : Optional.empty();
    }
    if (path == null) {
      return Optional.empty();
    }
    for (String dir : path.split(File.pathSeparator)) {
      if (!dir.isEmpty()) {
        Path p = Path.of(dir, name);
        if (Files.isRegularFile(p) && Files.isExecutable(p)) {
          return Optional.of(p);
        }
      }
    }
    return Optional.empty();
  }

  private String run(Path tool, List<String> args) {
    return SmiProcess.run(tool, args, timeout, "; start the node with --gpus 0 to run without GPUs");
  }
}
