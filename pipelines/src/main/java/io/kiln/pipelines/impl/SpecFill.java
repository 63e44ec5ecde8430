package io.kiln.pipelines.impl;

import io.kiln.pipelines.PipelineSpec;
import io.kiln.pipelines.StepAction;
import io.kiln.pipelines.StepSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** A pipeline with one run's input filled into its placeholders, and the filled values checked. */
public final class SpecFill {

  private SpecFill() {
  }

  /**
   * @throws IllegalArgumentException naming the step and what is missing or unusable
   */
  public static PipelineSpec fill(PipelineSpec spec, Map<String, String> input) {
    List<StepSpec> steps = new ArrayList<>();
    for (StepSpec s : spec.steps()) {
      steps.add(new StepSpec(s.name(), action(s, input), s.resources(), s.placement(), s.retries(), s.timeoutMs()));
    }
    String webhook = fillChecked("webhook", spec.webhook(), input);
    if (!webhook.isEmpty()) {
      httpOnly("webhook", webhook);
    }
    return new PipelineSpec(spec.name(), steps, spec.onNodeLoss(), spec.maxReruns(), webhook, spec.timeoutMs());
  }

  private static StepAction action(StepSpec s, Map<String, String> input) {
    String where = "step '" + s.name() + "'";
    StepAction a = s.action();
    if (a instanceof StepAction.Fetch f) {
      String uri = fillChecked(where, f.uri(), input);
      try {
        Sources.scheme(uri);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(where + ": " + e.getMessage());
      }
      return new StepAction.Fetch(uri, f.maxBytes());
    }
    if (a instanceof StepAction.Webhook w) {
      String url = fillChecked(where, w.url(), input);
      httpOnly(where, url);
      return new StepAction.Webhook(url, w.timeoutMs());
    }
    if (a instanceof StepAction.Generate g) {
      // Filled on its node with the earlier steps' results, in one pass; a missing input field is refused now.
      fillChecked(where + " prompt", g.prompt(), input);
      return g;
    }
    if (a instanceof StepAction.Custom c) {
      Map<String, String> params = new TreeMap<>();
      c.params().forEach((k, v) -> params.put(k, fillChecked(where + " param '" + k + "'", v, input)));
      return new StepAction.Custom(c.className(), params);
    }
    return a;
  }

  private static String fillChecked(String where, String text, Map<String, String> input) {
    try {
      return Templates.fill(text, input);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(where + ": " + e.getMessage());
    }
  }

  private static void httpOnly(String where, String url) {
    if (!url.startsWith("http://") && !url.startsWith("https://")) {
      throw new IllegalArgumentException(where + ": a webhook URL must be http:// or https://, got '" + url + "'");
    }
  }
}
