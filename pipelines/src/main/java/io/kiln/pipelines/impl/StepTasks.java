package io.kiln.pipelines.impl;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.runtime.TaskContext;
import io.kiln.runtime.WireCodec;
import io.kiln.pipelines.CacheEntry;
import io.kiln.pipelines.PipelineEvent;
import io.kiln.pipelines.Step;
import io.kiln.pipelines.StepAction;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The runtime task every pipeline step is: {@link #run} executes one attempt of one step on the node the
 * scheduler placed it on (holding the step's resources, e.g. a {@code fetch_slot}), using that node's
 * {@link NodeServices}. Runs on a task worker thread and blocks as the step does.
 */
public final class StepTasks {

  /** Largest encoded step result kept: results live in the run's status. */
  static final int MAX_OUTPUT_JSON_CHARS = 1 << 20;

  private StepTasks() {
  }

  /** The task function: a static method so that any node can run it by name. */
  public static StepOutcome run(StepInvocation inv) throws Exception {
    TaskContext task = TaskContext.current();
    NodeServices services = task.runtime().localService(NodeServices.class).orElseThrow(() ->
        new StepFailedException("node " + task.nodeId() + " runs no pipeline services"));
    long started = services.clockMillis().getAsLong();
    services.events().publish(new PipelineEvent(inv.runId(), inv.pipeline(), 0, "step_started", inv.step(),
        task.nodeId(), inv.attempt(), started, ""));
    services.gauges().enter(inv.step());
    try {
      StepContextImpl ctx = new StepContextImpl(inv, services, task.runtime());
      Map<String, Object> output;
      StepAction a = inv.action();
      if (a instanceof StepAction.Fetch f) {
        output = fetch(services, f);
      } else if (a instanceof StepAction.Infer i) {
        output = InferStep.run(ctx, services, i, inv.target(), inv.timeoutMs());
      } else if (a instanceof StepAction.Webhook w) {
        output = webhook(services, inv, w);
      } else if (a instanceof StepAction.Generate g) {
        output = GenerateStep.run(inv, services, g, inv.target(), inv.timeoutMs());
      } else {
        output = custom(services, ctx, (StepAction.Custom) a);
      }
      return new StepOutcome(task.nodeId(), started, services.clockMillis().getAsLong(), checked(inv, output));
    } finally {
      services.gauges().exit(inv.step());
    }
  }

  static Map<String, Object> fetch(NodeServices services, StepAction.Fetch f) throws IOException {
    CacheEntry e = services.cache().fetch(f.uri(), f.maxBytes());
    return entryOutput(e);
  }

  static Map<String, Object> entryOutput(CacheEntry e) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("key", e.key());
    out.put("uri", e.uri());
    out.put("node", e.nodeId());
    out.put("path", e.path());
    out.put("bytes", e.bytes());
    out.put("sha256", e.sha256());
    return out;
  }

  private static Map<String, Object> webhook(NodeServices services, StepInvocation inv, StepAction.Webhook w)
      throws IOException {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("run_id", inv.runId());
    body.put("pipeline", inv.pipeline());
    body.put("step", inv.step());
    body.put("node", services.nodeId());
    body.put("input", inv.input());
    Map<String, Object> results = new LinkedHashMap<>();
    Map<String, Object> timings = new LinkedHashMap<>();
    inv.results().forEach((name, r) -> { // in the order the steps ran (the coordinator's order, kept on the wire)
      results.put(name, r.output());
      Map<String, Object> t = new LinkedHashMap<>();
      t.put("node", r.nodeId());
      t.put("started_at_ms", r.startedAtMs());
      t.put("ended_at_ms", r.endedAtMs());
      t.put("took_ms", r.endedAtMs() - r.startedAtMs());
      timings.put(name, t);
    });
    body.put("results", results);
    body.put("timings", timings);
    int status = services.webhooks().post(w.url(), WireCodec.toJson(body), Duration.ofMillis(w.timeoutMs()));
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("url", w.url());
    out.put("status", status);
    out.put("node", services.nodeId());
    return out;
  }

  private static Map<String, Object> custom(NodeServices services, StepContextImpl ctx, StepAction.Custom c)
      throws Exception {
    Step step;
    try {
      step = StepClasses.load(services.classLoader(), c.className()).newInstance();
    } catch (IllegalArgumentException e) {
      throw new StepFailedException(e.getMessage() + " on node " + services.nodeId());
    } catch (java.lang.reflect.InvocationTargetException e) {
      throw new StepFailedException("constructing " + c.className() + " failed: " + e.getCause(), e.getCause());
    }
    Map<String, Object> out = step.run(ctx);
    return out == null ? Map.of() : out;
  }

  /** A result must encode (it crosses nodes and is stored) and stay small. */
  private static Map<String, Object> checked(StepInvocation inv, Map<String, Object> output) {
    ObjectMapper json = WireCodec.json();
    String text;
    try {
      text = json.writeValueAsString(output);
    } catch (IOException | RuntimeException e) {
      throw new StepFailedException("step '" + inv.step() + "' returned a result that is not JSON-like: " + e);
    }
    if (text.length() > MAX_OUTPUT_JSON_CHARS) {
      throw new StepFailedException("step '" + inv.step() + "' returned " + text.length()
          + " characters of JSON; results are kept in the run's status, at most " + MAX_OUTPUT_JSON_CHARS);
    }
    return output;
  }
}
