package io.kiln.engines.pytorch.impl;

import ai.djl.Device;
import ai.djl.MalformedModelException;
import ai.djl.Model;
import ai.djl.inference.Predictor;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.translate.TranslateException;
import ai.djl.util.Pair;
import io.kiln.pools.ModelExecutionException;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.spi.AbstractModelRunner;
import java.io.IOException;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/** Runs a TorchScript or DJL {@code .params} model through DJL's PyTorch engine with one predictor. */
public final class DjlModelRunner extends AbstractModelRunner {

  private final Model model;
  private final Predictor<StagedInputs.Batch, List<Tensor>> predictor;
  private final StagedInputs staged;
  private final String format;

  private DjlModelRunner(ModelSpec spec, Model model, String format) {
    super(spec, spec.outputs());
    this.model = model;
    this.format = format;
    this.predictor = model.newPredictor(new StagedInputs.Translator());
    this.staged = new StagedInputs(spec.inputs());
  }

  /**
   * Checks what can be checked without the engine: the host's byte order, the spec's datatypes and the
   * model file.
   *
   * @throws ModelLoadException with the uri and reason
   */
  public static ModelFiles precheck(ModelSpec spec) {
    if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
      throw new ModelLoadException("Kiln's tensors are little-endian and DJL passes them through in native order;"
          + " this host is big-endian");
    }
    for (TensorSpec t : concat(spec.inputs(), spec.outputs())) {
      if (DjlTypes.toDjl(t.datatype()).isEmpty()) {
        throw new ModelLoadException("model " + spec.uri() + ": tensor '" + t.name() + "' is " + t.datatype()
            + ", which the " + EngineSetup.ENGINE + " engine does not support");
      }
    }
    return ModelFiles.resolve(spec);
  }

  /**
   * Loads the model in {@code files} onto {@code device}; the engine must have been started with
   * {@link EngineSetup#pytorch}.
   *
   * @throws ModelLoadException with the uri and reason when anything is missing or does not fit
   */
  public static DjlModelRunner load(ModelSpec spec, ModelFiles files, Device device) {
    Model model = Model.newInstance(files.prefix(), device, EngineSetup.ENGINE);
    try {
      if (files.format().equals(ModelSpec.FORMAT_DJL_PARAMS)) {
        Block block;
        try {
          block = Architectures.build(spec);
        } catch (IllegalArgumentException e) {
          throw new ModelLoadException("model " + spec.uri() + ": " + e.getMessage(), e);
        }
        model.setBlock(block);
        model.load(files.dir(), files.prefix());
        if (!block.isInitialized()) {
          throw new ModelLoadException("model " + spec.uri() + ": " + files.prefix() + "-NNNN.params is not a DJL"
              + " parameter file (no DJL@ header)");
        }
      } else {
        model.load(files.dir(), files.prefix(), Map.of("mapLocation", "true"));
      }
      return new DjlModelRunner(spec, model, files.format());
    } catch (IOException | MalformedModelException | RuntimeException e) {
      model.close();
      if (e instanceof ModelLoadException mle) {
        throw mle;
      }
      throw new ModelLoadException("model " + spec.uri() + " (" + files.format() + " " + files.prefix() + " in "
          + files.dir() + ") did not load" + (files.format().equals(ModelSpec.FORMAT_DJL_PARAMS)
          ? " into architecture '" + spec.architecture() + "'" : "") + ": " + e.getMessage(), e);
    }
  }

  public String format() {
    return format;
  }

  public String device() {
    return model.getNDManager().getDevice().toString();
  }

  /** Sum of parameter sizes, when the engine exposes them. */
  public OptionalLong parameterCount() {
    try {
      long n = 0;
      for (Pair<String, Parameter> p : model.getBlock().getParameters()) {
        n += p.getValue().getArray().size();
      }
      return OptionalLong.of(n);
    } catch (RuntimeException e) {
      return OptionalLong.empty();
    }
  }

  // The rows go straight from the requests into the engine's input memory (see StagedInputs), not via a stacked copy.
  @Override
  protected List<Tensor> forwardRows(List<List<Tensor>> ordered, long totalRows) {
    return run(staged.gather(ordered, totalRows));
  }

  @Override
  protected List<Tensor> forward(List<Tensor> inputs) {
    return run(staged.gather(List.of(inputs), -1)); // one request's: every shape as given
  }

  private List<Tensor> run(StagedInputs.Batch batch) {
    try {
      return predictor.predict(batch);
    } catch (TranslateException e) {
      throw new ModelExecutionException("the " + EngineSetup.ENGINE + " engine failed: " + e.getMessage(), e);
    } catch (ModelExecutionException e) {
      throw e;
    } catch (RuntimeException e) {
      // Native errors surface as EngineException or plain runtime exceptions; both mean the worker failed.
      throw new ModelExecutionException("the " + EngineSetup.ENGINE + " engine failed: " + e.getMessage(), e);
    }
  }

  @Override
  protected void release() {
    predictor.close();
    model.close();
  }

  private static List<TensorSpec> concat(List<TensorSpec> a, List<TensorSpec> b) {
    List<TensorSpec> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }
}
