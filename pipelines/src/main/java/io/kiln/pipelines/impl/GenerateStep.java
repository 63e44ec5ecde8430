package io.kiln.pipelines.impl;

import io.kiln.pools.Cancellation;
import io.kiln.pools.ChunkListener;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.PoolClient;
import io.kiln.pools.RequestContext;
import io.kiln.pools.RequestValidator;
import io.kiln.pools.Tensor;
import io.kiln.pools.TextModels;
import io.kiln.pools.ValidatedRequest;
import io.kiln.pipelines.InferTarget;
import io.kiln.pipelines.StepAction;
import io.kiln.runtime.WireCodec;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The built-in generate step: fills its prompt from the run's input and earlier steps' results, sends it to this
 * node's pool of a text generation model as one stream of the {@link TextModels} contract (the request
 * {@code /v1/chat/completions} or {@code /v1/completions} would make of the same prompt and settings) and gathers
 * the chunks into the step's result: {@code text}, {@code finish_reason}, the token counts, the prompt sent.
 * Blocks its task thread until the stream ends or the step's timeout, when it withdraws the stream.
 */
final class GenerateStep {

  private GenerateStep() {
  }

  static Map<String, Object> run(StepInvocation inv, NodeServices services, StepAction.Generate g, InferTarget target,
                                 long timeoutMs) throws InterruptedException {
    if (target == null) {
      throw new StepFailedException("no version of deployment '" + g.deployment() + "' was resolved");
    }
    String prompt;
    try {
      prompt = StepReferences.render(g.prompt(), inv.input(), inv.results());
    } catch (IllegalArgumentException e) {
      throw new StepFailedException("prompt: " + e.getMessage());
    }
    String textInput = g.chat() ? WireCodec.json().createArrayNode()
        .add(WireCodec.json().createObjectNode().put("role", "user").put("content", prompt)).toString() : prompt;
    String id = inv.runId() + "/" + inv.step();
    InferenceRequest request = new InferenceRequest(id, List.of(Tensor.ofBytes(TextModels.TEXT_INPUT, new long[] {1},
        List.of(textInput.getBytes(StandardCharsets.UTF_8)))), List.of(), parameters(g));
    ValidatedRequest valid = new RequestValidator(g.deployment(), TextModels.generation(), 0).validate(request);
    Cancellation cancellation = Cancellation.create(); // withdraws the stream once the step stops waiting
    RequestContext context = RequestContext.of(id, System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(Math.max(1, timeoutMs)), null, RequestContext.Priority.NORMAL, cancellation);
    Gather gather = new Gather();
    services.pools().stream(context, target.deployment(), target.version(), services.nodeId(), valid,
        PoolClient.DEFAULT_STREAM_WINDOW, PoolClient.DEFAULT_MAX_CHUNK_BYTES, gather);
    String where = "pool " + target.deployment() + "@" + target.version() + " on node " + services.nodeId();
    try {
      gather.done.get(timeoutMs + 10_000, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      cancellation.cancel("the step failed"); // the stream may still run when the gathering refused it
      Throwable c = e.getCause();
      throw new StepFailedException(where + ": " + (c.getMessage() == null ? c.toString() : c.getMessage()), c);
    } catch (TimeoutException e) {
      cancellation.cancel("the step stopped waiting after " + timeoutMs + " ms");
      throw new StepFailedException(where + " did not finish generating within " + timeoutMs + " ms");
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("deployment", target.deployment());
    out.put("version", target.version());
    out.put("node", gather.node == null ? services.nodeId() : gather.node);
    out.put("prompt", prompt);
    out.put("text", gather.text.toString());
    out.put("finish_reason", gather.finish);
    out.put("prompt_tokens", gather.promptTokens);
    out.put("completion_tokens", gather.completionTokens);
    return out;
  }

  /** The contract's request parameters, typed as the gateway's OpenAI API sends them. */
  static Map<String, Object> parameters(StepAction.Generate g) {
    Map<String, Object> p = new LinkedHashMap<>();
    p.put(TextModels.MAX_TOKENS, (long) g.maxTokens());
    p.put(TextModels.TEMPERATURE, g.temperature());
    if (g.topP() != null) {
      p.put(TextModels.TOP_P, g.topP());
    }
    if (g.topK() != null) {
      p.put(TextModels.TOP_K, (long) g.topK());
    }
    if (g.seed() != null) {
      p.put(TextModels.SEED, g.seed());
    }
    if (!g.stop().isEmpty()) {
      var stops = WireCodec.json().createArrayNode();
      g.stop().forEach(stops::add);
      p.put(TextModels.STOP, stops.toString());
    }
    if (g.chat()) {
      p.put(TextModels.INPUT_FORMAT, TextModels.FORMAT_CHAT);
    }
    return p;
  }

  /** Gathers a stream's chunks; called on one Vert.x context, read after {@link #done} completes. */
  private static final class Gather implements ChunkListener {
    final CompletableFuture<Void> done = new CompletableFuture<>();
    final StringBuilder text = new StringBuilder();
    String finish = "";
    long promptTokens;
    long completionTokens;
    String node;

    @Override
    public void chunk(InferenceResponse chunk) {
      for (Tensor t : chunk.outputs()) {
        switch (t.name()) {
          case TextModels.TEXT_OUTPUT -> t.byteElements()
              .forEach(b -> text.append(new String(b, StandardCharsets.UTF_8)));
          case TextModels.FINISH_REASON -> t.byteElements().forEach(b -> {
            if (b.length > 0) {
              finish = new String(b, StandardCharsets.UTF_8);
            }
          });
          case TextModels.PROMPT_TOKENS -> promptTokens = firstInt(t, promptTokens);
          case TextModels.COMPLETION_TOKENS -> completionTokens = firstInt(t, completionTokens);
          default -> { }
        }
      }
      if (text.length() > StepReferences.MAX_RENDERED_CHARS) {
        done.completeExceptionally(new StepFailedException("the model generated more than "
            + StepReferences.MAX_RENDERED_CHARS + " characters"));
      }
    }

    @Override
    public void end(Map<String, Object> parameters) {
      Object n = parameters.get("kiln_node");
      node = n == null ? null : n.toString();
      done.complete(null);
    }

    @Override
    public void error(Throwable error) {
      done.completeExceptionally(error);
    }

    private static long firstInt(Tensor t, long dflt) {
      byte[] d = t.data();
      return d.length < 4 ? dflt : java.nio.ByteBuffer.wrap(d).order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt();
    }
  }
}
