package io.kiln.pipelines.examples;

import io.kiln.pipelines.NodeCache;
import io.kiln.pipelines.Step;
import io.kiln.pipelines.StepContext;
import io.kiln.pipelines.StepResult;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.PoolClient;
import io.kiln.pools.RequestContext;
import io.kiln.pools.Tensor;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The OCR example's analyse step (deploy/examples/ocr): reads the image its fetch step cached on this node and
 * runs it through five of <em>this node's</em> warm pools, in turn: {@code det-pre} (image bytes to the
 * detector's tensor), {@code det} (PP-OCRv4 text detection, ONNX Runtime), {@code crop} (DB post-processing and
 * one crop per text box), {@code rec} (PP-OCRv4 recognition, ONNX Runtime) and {@code ctc} (CTC decoding to
 * BYTES text). The image never leaves the node; the step's placement (same_node_as: the fetch) puts it there.
 *
 * <p>Parameters: {@code from} (the fetch step, default {@code fetch}), {@code timeout_ms} (per pool call,
 * default 30000), and the deployments {@code det_pre}, {@code det}, {@code crop}, {@code rec}, {@code ctc}
 * (defaults: ocr-det-pre, ocr-det, ocr-crop, ocr-rec, ocr-ctc), all at {@code version} (default 1).
 */
public final class OcrStep implements Step {

  /** Largest image the step reads from the cache. */
  static final long MAX_IMAGE_BYTES = 32L << 20;

  @Override
  public Map<String, Object> run(StepContext ctx) throws Exception {
    Map<String, String> p = ctx.params();
    String from = p.getOrDefault("from", "fetch");
    StepResult fetched = ctx.result(from).orElseThrow(() ->
        new IllegalArgumentException("no result of step '" + from + "' (the fetch of the image)"));
    if (!fetched.nodeId().equals(ctx.nodeId())) {
      throw new IllegalStateException("step '" + from + "' cached the image on node " + fetched.nodeId()
          + " but this step runs on " + ctx.nodeId() + ": give it strategy same_node_as: " + from);
    }
    byte[] image;
    try (NodeCache.Lease lease = ctx.cache().open(fetched.text("key"))) {
      long size = Files.size(lease.path());
      if (size > MAX_IMAGE_BYTES) {
        throw new IllegalArgumentException("the image is " + size + " bytes; the OCR step reads at most "
            + MAX_IMAGE_BYTES);
      }
      image = Files.readAllBytes(lease.path());
    }
    PoolClient pools = ctx.runtime().localService(PoolClient.class).orElseThrow(() ->
        new IllegalStateException("this node has no pool client"));
    Calls calls = new Calls(ctx, pools, p.getOrDefault("version", "1"),
        Long.parseLong(p.getOrDefault("timeout_ms", "30000")));
    Tensor imageTensor = new Tensor("image", DataType.UINT8, new long[] {1, image.length}, image);

    Tensor x = calls.one(p.getOrDefault("det_pre", "ocr-det-pre"), List.of(imageTensor), "x");
    Tensor prob = calls.one(p.getOrDefault("det", "ocr-det"), List.of(x.withName("x")), null);
    Map<String, Tensor> cropped = calls.all(p.getOrDefault("crop", "ocr-crop"),
        List.of(imageTensor, prob.withName("prob")));
    // crop answers one row per image: [1, n, 3, 48, W] and [1, n, 8]; the recogniser takes the n crops as rows.
    Tensor crops = dropFirst(cropped.get("crops"), "x");
    Tensor boxes = dropFirst(cropped.get("boxes"), "boxes");
    List<String> lines = new ArrayList<>();
    if (crops.shape()[0] > 0) {
      Tensor scores = calls.one(p.getOrDefault("rec", "ocr-rec"), List.of(crops), null);
      Tensor text = calls.one(p.getOrDefault("ctc", "ocr-ctc"), List.of(scores.withName("probs")), "text");
      lines = strings(text);
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("text", String.join("\n", lines));
    out.put("lines", lines);
    out.put("boxes", boxList(boxes));
    out.put("node", ctx.nodeId());
    return out;
  }

  /** A tensor of one row as that row's own tensor: [1, n, ...] to [n, ...]. */
  static Tensor dropFirst(Tensor t, String name) {
    if (t == null || t.shape().length < 2 || t.shape()[0] != 1) {
      throw new IllegalStateException("expected an output of one row, got " + t);
    }
    return new Tensor(name, t.datatype(), java.util.Arrays.copyOfRange(t.shape(), 1, t.shape().length), t.data());
  }

  /** A BYTES tensor's elements (4-byte little-endian length, then the bytes) as UTF-8 strings. */
  static List<String> strings(Tensor t) {
    if (t.datatype() != DataType.BYTES) {
      throw new IllegalStateException("output '" + t.name() + "' is " + t.datatype() + ", expected BYTES");
    }
    ByteBuffer b = ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN);
    List<String> out = new ArrayList<>();
    while (b.remaining() >= 4) {
      int n = b.getInt();
      if (n < 0 || n > b.remaining()) {
        throw new IllegalStateException("output '" + t.name() + "': element " + out.size() + " claims " + n
            + " bytes, " + b.remaining() + " remain");
      }
      byte[] s = new byte[n];
      b.get(s);
      out.add(new String(s, StandardCharsets.UTF_8));
    }
    return out;
  }

  private static List<List<Float>> boxList(Tensor boxes) {
    List<List<Float>> out = new ArrayList<>();
    if (boxes == null || boxes.shape()[0] == 0) {
      return out;
    }
    float[] v = boxes.asFloats();
    int per = v.length / (int) boxes.shape()[0];
    for (int r = 0; r < boxes.shape()[0]; r++) {
      List<Float> row = new ArrayList<>();
      for (int c = 0; c < per; c++) {
        row.add(v[r * per + c]);
      }
      out.add(row);
    }
    return out;
  }

  /** Calls to this node's pools on behalf of one step run. */
  private record Calls(StepContext ctx, PoolClient pools, String version, long timeoutMs) {

    Map<String, Tensor> all(String deployment, List<Tensor> inputs) throws Exception {
      InferenceRequest request = new InferenceRequest(ctx.runId() + "/" + ctx.step() + "/" + deployment, inputs,
          List.of(), Map.of());
      InferenceResponse r;
      try {
        r = pools.infer(RequestContext.within(request.id(), timeoutMs), deployment, version, ctx.nodeId(), request)
            .get(timeoutMs + 10_000, TimeUnit.MILLISECONDS);
      } catch (ExecutionException e) {
        Throwable c = e.getCause();
        throw new IllegalStateException("pool " + deployment + "@" + version + " on node " + ctx.nodeId() + ": "
            + (c.getMessage() == null ? c.toString() : c.getMessage()), c);
      } catch (TimeoutException e) {
        throw new IllegalStateException("pool " + deployment + " on node " + ctx.nodeId() + " did not answer within "
            + timeoutMs + " ms");
      }
      Map<String, Tensor> out = new LinkedHashMap<>();
      for (Tensor t : r.outputs()) {
        out.put(t.name(), t);
      }
      return out;
    }

    /** The output named {@code name}, or the only output when {@code name} is null. */
    Tensor one(String deployment, List<Tensor> inputs, String name) throws Exception {
      Map<String, Tensor> outs = all(deployment, inputs);
      if (name == null) {
        if (outs.size() != 1) {
          throw new IllegalStateException("pool " + deployment + " answered " + outs.keySet() + ", expected one output");
        }
        return outs.values().iterator().next();
      }
      Tensor t = outs.get(name);
      if (t == null) {
        throw new IllegalStateException("pool " + deployment + " answered " + outs.keySet() + ", no '" + name + "'");
      }
      return t;
    }
  }
}
