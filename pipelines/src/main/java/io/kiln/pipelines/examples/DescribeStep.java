package io.kiln.pipelines.examples;

import io.kiln.pipelines.Step;
import io.kiln.pipelines.StepContext;
import io.kiln.pipelines.StepResult;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The example pipeline's "describe" step (the seed's step C, an LLM call in the original): turns an infer
 * step's outputs into a short report, per output tensor and row: the arg-max class and its score, plus the
 * tensor's mean. It needs no local file, so it may run on any node.
 *
 * <p>Parameters: {@code from}, the infer step whose outputs to describe (default {@code analyse}).
 */
public final class DescribeStep implements Step {

  @Override
  public Map<String, Object> run(StepContext ctx) {
    String from = ctx.params().getOrDefault("from", "analyse");
    StepResult infer = ctx.result(from).orElseThrow(() ->
        new IllegalArgumentException("no result of step '" + from + "' to describe"));
    Object outputs = infer.output().get("outputs");
    if (!(outputs instanceof List<?> list)) {
      throw new IllegalArgumentException("step '" + from + "' has no outputs (is it an infer step?)");
    }
    List<Map<String, Object>> tensors = new ArrayList<>();
    StringBuilder summary = new StringBuilder();
    for (Object o : list) {
      Map<?, ?> t = (Map<?, ?>) o;
      Map<String, Object> d = describe(t);
      tensors.add(d);
      if (summary.length() > 0) {
        summary.append("; ");
      }
      summary.append(t.get("name")).append(": ").append(d.containsKey("argmax")
          ? "argmax per row " + d.get("argmax") : "no data");
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("summary", summary.toString());
    out.put("tensors", tensors);
    out.put("inferred_on", infer.nodeId());
    out.put("described_on", ctx.nodeId());
    return out;
  }

  private static Map<String, Object> describe(Map<?, ?> t) {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("name", t.get("name"));
    d.put("shape", t.get("shape"));
    if (!(t.get("data") instanceof List<?> data) || !(t.get("shape") instanceof List<?> shape) || shape.isEmpty()
        || data.isEmpty()) {
      return d;
    }
    int rows = ((Number) shape.get(0)).intValue();
    int width = rows == 0 ? 0 : data.size() / rows;
    List<Integer> argmax = new ArrayList<>();
    List<Double> score = new ArrayList<>();
    double sum = 0;
    for (int r = 0; r < rows; r++) {
      int best = 0;
      double bestValue = Double.NEGATIVE_INFINITY;
      for (int c = 0; c < width; c++) {
        double v = ((Number) data.get(r * width + c)).doubleValue();
        sum += v;
        if (v > bestValue) {
          bestValue = v;
          best = c;
        }
      }
      argmax.add(best);
      score.add(bestValue);
    }
    d.put("argmax", argmax);
    d.put("max", score);
    d.put("mean", data.isEmpty() ? 0 : sum / data.size());
    return d;
  }
}
