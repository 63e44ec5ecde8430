package io.kiln.pools;

import static io.kiln.pools.testsupport.PoolNodes.builtin;
import static io.kiln.pools.testsupport.PoolNodes.mlp;
import static io.kiln.pools.testsupport.PoolNodes.spec;
import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.engines.builtin.impl.BuiltinModels;
import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.pools.testsupport.ProjectModels;
import io.kiln.runtime.ActorHandle;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Two nodes in one cluster: a client on one reaches the pools on both, and every board sees every pool. */
@Tag("slow")
class PoolClientTest {

  private static final Duration T = Duration.ofSeconds(30);

  /** A request context with {@link #T} to go. */
  private static RequestContext within() {
    return RequestContext.within("", T.toMillis());
  }

  private PoolNodes nodes;
  private PoolClient fromB;

  @BeforeEach
  void start() {
    nodes = new PoolNodes("a", "b");
    fromB = new PoolClient(nodes.node("b"));
  }

  @AfterEach
  void stop() {
    nodes.close();
  }

  private static InferenceRequest row(float v) {
    return InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[] {v, v, v, v}));
  }

  @Test
  void aClientOnAnotherNodeReachesThePoolAndItsStats() {
    nodes.start(spec("mlp", "a", mlp(), PoolConfig.DEFAULTS, 1, 0), 1);

    InferenceRequest req = new InferenceRequest("r1", List.of(ProjectModels.expectedInput("mlp")), List.of(), java.util.Map.of());
    InferenceResponse r = result(fromB.infer(within(), "mlp", "1", "a", req));

    assertThat(r.id()).isEqualTo("r1");
    assertThat(r.parameters()).containsEntry("kiln_node", "a");
    PoolManagerTest.assertClose(r.outputs().get(0), ProjectModels.expectedOutput("mlp"));
    assertThat(result(fromB.stats("mlp", "1", "a"))).extracting("completed", "totalWorkers").containsExactly(1L, 1);
    assertThat(result(fromB.status("mlp", "1", "a")).workers()).singleElement()
        .satisfies(w -> assertThat(w.loadInfo().format()).isEqualTo(ModelSpec.FORMAT_TORCHSCRIPT));
  }

  @Test
  void cancellingTheRequestsTokenUnqueuesItAndCountsItCancelled() {
    ActorHandle<PoolManager> m = result(PoolManager.getOrCreate(nodes.node("a"),
        spec("idle", "a", builtin(BuiltinModels.IDENTITY), PoolConfig.DEFAULTS, 0, 0)));
    Cancellation token = Cancellation.create();
    CompletableFuture<InferenceResponse> f = fromB.infer(RequestContext.of("c1", System.nanoTime() + T.toNanos(), null,
        RequestContext.Priority.NORMAL, token), "idle", "1", "a", row(1));
    await().until(() -> result(m.call(PoolManager::stats)).queueDepth() == 1);

    assertThat(token.cancel("client went away")).isTrue();

    assertThat(failure(f)).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE)).hasMessageContaining("client went away");
    await().until(() -> result(m.call(PoolManager::stats)).queueDepth() == 0);
    assertThat(result(m.call(PoolManager::stats))).extracting("cancelled", "failed").containsExactly(1L, 0L);
    assertThat(result(m.callAsync(PoolManager::scale, 1), PoolNodes.WAIT)).isEqualTo(1);
    assertThat(result(m.call(PoolManager::stats)).completed()).as("the cancelled request never ran").isZero();
  }

  @Test
  void cancellingTheReturnedFutureWithdrawsNothing() {
    ActorHandle<PoolManager> m = result(PoolManager.getOrCreate(nodes.node("a"),
        spec("kept", "a", builtin(BuiltinModels.IDENTITY), PoolConfig.DEFAULTS, 0, 0)));
    CompletableFuture<InferenceResponse> f = fromB.infer(within(), "kept", "1", "a", row(1));
    await().until(() -> result(m.call(PoolManager::stats)).queueDepth() == 1);

    f.cancel(true); // only the caller stops waiting: the token is the one way to withdraw

    assertThat(result(m.callAsync(PoolManager::scale, 1), PoolNodes.WAIT)).isEqualTo(1);
    await().until(() -> result(m.call(PoolManager::stats)).completed() == 1);
    assertThat(result(m.call(PoolManager::stats)).cancelled()).isZero();
  }

  @Test
  void queuedNormalRequestsOvertakeQueuedLowOnes() {
    PoolConfig oneByOne = PoolConfig.builder().maxBatchSize(1).build();
    ActorHandle<PoolManager> m = result(PoolManager.getOrCreate(nodes.node("a"),
        spec("ranked", "a", builtin(BuiltinModels.IDENTITY), oneByOne, 0, 0)));
    result(fromB.stats("ranked", "1", "a")); // the client knows the manager: the four go in the order sent
    List<String> answered = new java.util.concurrent.CopyOnWriteArrayList<>();
    List<CompletableFuture<InferenceResponse>> all = new java.util.ArrayList<>();
    for (String id : List.of("low-1", "low-2", "normal-1", "normal-2")) {
      RequestContext.Priority p = id.startsWith("low") ? RequestContext.Priority.LOW : RequestContext.Priority.NORMAL;
      CompletableFuture<InferenceResponse> f = fromB.infer(RequestContext.within(id, T.toMillis()).withPriority(p),
          "ranked", "1", "a", new InferenceRequest(id, row(1).inputs(), List.of(), java.util.Map.of()));
      f.thenAccept(r -> answered.add(r.id()));
      all.add(f);
    }
    await().until(() -> result(m.call(PoolManager::stats)).queueDepth() == 4);

    assertThat(result(m.callAsync(PoolManager::scale, 1), PoolNodes.WAIT)).isEqualTo(1); // one worker, one at a time
    all.forEach(f -> result(f));

    assertThat(answered).containsExactly("normal-1", "normal-2", "low-1", "low-2");
  }

  @Test
  void unknownAndDeadPoolsAreUnavailableAndARecreatedManagerIsFoundAgain() {
    Throwable none = failure(fromB.infer(within(), "nope", "1", "a", row(1)));
    assertThat(none).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE)).hasMessageContaining("no pool");

    PoolSpec spec = spec("echo", "a", builtin(BuiltinModels.IDENTITY), PoolConfig.DEFAULTS, 1, 0);
    ActorHandle<PoolManager> m = nodes.start(spec, 1);
    assertThat(result(fromB.infer(within(), "echo", "1", "a", row(1))).outputs()).hasSize(1);

    result(nodes.node("a").kill(m, false));
    Throwable gone = failure(fromB.infer(within(), "echo", "1", "a", row(2)));
    assertThat(gone).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE));

    nodes.start(spec, 1);
    assertThat(result(fromB.infer(within(), "echo", "1", "a", row(3))).outputs().get(0).asFloats())
        .containsExactly(3, 3, 3, 3);
  }

  @Test
  void aRequestWhoseManagerDiedIsResentOnceUnderThePoolResendPolicy() {
    assertThat(io.kiln.runtime.RetryPolicy.POOL_RESEND.maxRetries()).isEqualTo(1);
    ActorHandle<PoolManager> m = result(PoolManager.getOrCreate(nodes.node("a"),
        spec("resend", "a", builtin(BuiltinModels.IDENTITY), PoolConfig.DEFAULTS, 0, 0)));
    CompletableFuture<InferenceResponse> once = fromB.infer(within(), "resend", "1", "a", row(4));
    await().until(() -> result(m.call(PoolManager::stats)).queueDepth() == 1);

    result(nodes.node("a").kill(m, true)); // restarted under its name: the request is re-sent to it
    await().ignoreExceptions().until(() -> result(m.call(PoolManager::stats)).queueDepth() == 1);
    assertThat(once).isNotDone();
    assertThat(result(m.callAsync(PoolManager::scale, 1), PoolNodes.WAIT)).isEqualTo(1);
    assertThat(result(once).outputs().get(0).asFloats()).containsExactly(4, 4, 4, 4);

    result(m.callAsync(PoolManager::scale, 0), PoolNodes.WAIT);
    CompletableFuture<InferenceResponse> twice = fromB.infer(within(), "resend", "1", "a", row(5));
    await().until(() -> result(m.call(PoolManager::stats)).queueDepth() == 1);
    result(nodes.node("a").kill(m, true));
    await().ignoreExceptions().until(() -> result(m.call(PoolManager::stats)).queueDepth() == 1);
    result(nodes.node("a").kill(m, true)); // its one resend is spent
    assertThat(failure(twice)).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE));
  }

  @Test
  void everyNodesBoardSeesThePoolsOfBothNodesWithFreshLoad() {
    PoolLoadBoard onA = new PoolLoadBoard(nodes.node("a"));
    PoolLoadBoard onB = new PoolLoadBoard(nodes.node("b"));
    result(onA.ready());
    result(onB.ready());
    nodes.start(spec("both", "a", builtin(BuiltinModels.IDENTITY), PoolConfig.DEFAULTS, 1, 0), 1);
    ActorHandle<PoolManager> idleOnB = result(PoolManager.getOrCreate(nodes.node("b"),
        spec("both", "b", builtin(BuiltinModels.IDENTITY), PoolConfig.DEFAULTS, 0, 0)));
    PoolClient fromA = new PoolClient(nodes.node("a"));
    fromA.infer(within(), "both", "1", "b", row(1)); // waits on b until its pool closes

    for (PoolLoadBoard board : List.of(onA, onB)) {
      await().untilAsserted(() -> {
        List<PoolLoad> pools = board.pools("both", "1");
        assertThat(pools).extracting(PoolLoad::nodeId).containsExactly("a", "b");
        assertThat(pools.get(0)).extracting("ready", "queueDepth", "idleWorkers", "capacity")
            .containsExactly(true, 0, 1, PoolConfig.DEFAULT_MAX_QUEUED);
        assertThat(pools.get(1)).extracting("ready", "queueDepth", "totalWorkers").containsExactly(false, 1, 0);
        assertThat(pools).allSatisfy(p -> assertThat(p.age()).isLessThan(PoolLoadBoard.DEFAULT_MAX_AGE));
      });
    }
    assertThat(onA.pools("other", "1")).isEmpty();

    result(idleOnB.run(PoolManager::close));
    await().until(() -> onA.pools("both", "1").size() == 1);
    nodes.cluster.crash("a");
    await().until(() -> onB.pools("both", "1").isEmpty());
    onA.close();
    onB.close();
  }

  @Test
  void aRequestSentUncheckedIsValidatedByThePoolAndAValidatedOneIsServedAsIs() {
    ModelSpec identity = builtin(BuiltinModels.IDENTITY);
    nodes.start(spec("checked", "a", identity, PoolConfig.DEFAULTS, 1, 0), 1);
    InferenceRequest wrongName = InferenceRequest.of(Tensor.ofFloats("y", new long[] {1, 4}, new float[4]));

    Throwable refused = failure(fromB.infer(within(), "checked", "1", "a", wrongName));
    assertThat(refused).isInstanceOfSatisfying(InferenceException.class,
            e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.INVALID_INPUT))
        .hasMessage("inputs[0].name: model 'checked' has no input 'y' (its inputs: [x])");

    ValidatedRequest validated = new RequestValidator("checked", identity.signature(), 0).validate(row(3));
    InferenceResponse r = result(fromB.infer(within(), "checked", "1", "a", validated));
    assertThat(r.outputs().get(0).asFloats()).containsExactly(3, 3, 3, 3);
    assertThat(result(fromB.stats("checked", "1", "a"))).extracting("invalid", "completed").containsExactly(1L, 1L);
  }
}
