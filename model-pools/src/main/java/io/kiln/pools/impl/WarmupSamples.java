package io.kiln.pools.impl;

import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.RequestValidator;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A model folder's warm-up samples, as Triton's {@code model_warmup} gives real inputs: the OIP JSON inference requests
 * in its {@value #FOLDER}/ folder ({@code *.json}, in name order; see {@link JsonRequestReader}), which the loader
 * warms the model with instead of synthetic zeros. Each is checked against the spec's signature as a client's request
 * is ({@link RequestValidator}: names, datatypes, shapes) and as a pool admits one (inputs sharing a first dimension
 * that is not 0). A file over {@link #MAX_FILE_BYTES}, one that does not parse or does not fit is skipped with a WARN
 * naming it and the field, and listed among the problems: a sample never fails a load.
 */
final class WarmupSamples {

  /** The model folder's sub-folder holding the samples. */
  static final String FOLDER = "warmup";
  /** The largest sample file read; a bigger one is skipped (its tensors would be held for the whole warm-up). */
  static final long MAX_FILE_BYTES = 64L << 20;
  /** What the loader calls its one synthetic sample, a row of zeros per input. */
  static final String ZEROS = "synthetic zeros";

  private static final Logger LOG = LoggerFactory.getLogger(WarmupSamples.class);

  /**
   * One warm-up request.
   *
   * @param name what logs and the load info call it: {@code warmup/NAME.json}, or {@link #ZEROS}
   */
  record Sample(String name, InferenceRequest request) {
  }

  /** The samples that fit, and a line for each file skipped. */
  record Found(List<Sample> samples, List<String> problems) {
    static final Found NONE = new Found(List.of(), List.of());
  }

  private WarmupSamples() {
  }

  /**
   * The samples of {@code spec}'s folder (none when its uri is not a folder, or the folder has no
   * {@value #FOLDER}/). Blocking: reads the files.
   */
  static Found read(ModelSpec spec) {
    Path dir = spec.uri().resolve(FOLDER);
    if (!Files.isDirectory(spec.uri()) || !Files.isDirectory(dir)) {
      return Found.NONE;
    }
    List<String> problems = new ArrayList<>();
    List<Path> files;
    try (Stream<Path> list = Files.list(dir)) {
      files = list.filter(f -> f.getFileName().toString().endsWith(".json") && Files.isRegularFile(f)).sorted().toList();
    } catch (IOException e) {
      warn(spec, problems, "warm-up folder " + FOLDER + "/ cannot be listed (" + e + "); warming with synthetic zeros");
      return new Found(List.of(), problems);
    }
    if (files.isEmpty()) {
      warn(spec, problems, "warm-up folder " + FOLDER + "/ holds no .json request file; warming with synthetic zeros");
    }
    RequestValidator validator = new RequestValidator(modelName(spec), spec.modelSignature(), 0);
    List<Sample> samples = new ArrayList<>();
    for (Path file : files) {
      String name = FOLDER + "/" + file.getFileName();
      try {
        long bytes = Files.size(file);
        if (bytes > MAX_FILE_BYTES) {
          skip(spec, problems, name, bytes + " bytes, over the " + (MAX_FILE_BYTES >> 20) + " MiB a warm-up sample may"
              + " have");
          continue;
        }
        InferenceRequest request;
        try (InputStream in = new BufferedInputStream(Files.newInputStream(file))) {
          request = JsonRequestReader.read(in);
        }
        validator.validate(request);
        BatchKey.admit(request, BatchKey.wholeInputs(spec.modelSignature()));
        samples.add(new Sample(name, request));
      } catch (IllegalArgumentException | InferenceException e) {
        skip(spec, problems, name, e.getMessage());
      } catch (IOException e) {
        skip(spec, problems, name, "cannot be read (" + e + ")");
      }
    }
    return new Found(samples, problems);
  }

  private static void skip(ModelSpec spec, List<String> problems, String name, String why) {
    warn(spec, problems, "warm-up sample " + name + " skipped: " + why);
  }

  private static void warn(ModelSpec spec, List<String> problems, String problem) {
    problems.add(problem);
    LOG.warn("model {}: {}", spec.uri(), problem);
  }

  // How the validator's messages name the model: its folder.
  private static String modelName(ModelSpec spec) {
    Path name = spec.uri().toAbsolutePath().normalize().getFileName();
    return name == null ? spec.uri().toString() : name.toString();
  }
}
