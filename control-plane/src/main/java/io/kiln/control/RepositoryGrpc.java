package io.kiln.control;

import io.kiln.control.impl.RepositoryModels;
import io.kiln.gateway.BearerToken;
import io.kiln.gateway.spi.PoolAdmin;
import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcService;
import io.kiln.protocol.grpc.RepositoryIndexRequest;
import io.kiln.protocol.grpc.RepositoryIndexResponse;
import io.kiln.protocol.grpc.RepositoryModelLoadRequest;
import io.kiln.protocol.grpc.RepositoryModelLoadResponse;
import io.kiln.protocol.grpc.RepositoryModelUnloadRequest;
import io.kiln.protocol.grpc.RepositoryModelUnloadResponse;
import io.kiln.runtime.Futures;
import io.kiln.runtime.KilnRuntime;
import io.kiln.serve.ServeController;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.server.GrpcServer;
import io.vertx.grpc.server.GrpcServerRequest;
import io.vertx.grpc.server.GrpcServerResponse;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * The OIP model-repository extension over gRPC, as Triton defines it on {@code inference.GRPCInferenceService}:
 * {@code RepositoryIndex}, {@code RepositoryModelLoad}, {@code RepositoryModelUnload}, with the answers of the HTTP
 * endpoints ({@link RepositoryApi}; both are {@link RepositoryModels}).
 *
 * <ul>
 *   <li>{@code repository_name}: a Kiln repository is a deployment (a multiplexed one's models, or a plain one's
 *       versions), so a non-empty name picks the deployment (an index of an unknown one is empty; a load or unload of a model that is not in it NOT_FOUND);
 *       empty means every deployment, as in Triton.</li>
 *   <li>{@code parameters}: models load as their deployment declares them, so Triton's {@code config} and
 *       {@code file:...} overrides (and any other parameter) are INVALID_ARGUMENT naming the parameter rather than
 *       silently ignored.</li>
 * </ul>
 *
 * <p>Status codes: without the management token (metadata {@code authorization: Bearer <token>}) UNAUTHENTICATED;
 * unknown model NOT_FOUND; no ready pool or as many loads running as allowed UNAVAILABLE with a {@code retry-after}
 * trailer in seconds; a model that failed to load INTERNAL; a name over {@value #MAX_NAME_CHARS} characters
 * INVALID_ARGUMENT. Messages are bounded by the gateway's gRPC message size limit.
 *
 * <p><b>Threading:</b> handlers run on the gRPC server's event loop and never block.
 */
public final class RepositoryGrpc {

  /** Longest repository or model name accepted (model names are at most 63 characters). */
  public static final int MAX_NAME_CHARS = 256;

  static final String RETRY_AFTER_TRAILER = "retry-after";

  private final RepositoryModels models;
  private final BearerToken authorize;

  /** @param token required bearer token, or null/empty for none */
  public RepositoryGrpc(KilnRuntime runtime, ServeController serve, PoolAdmin pools, String token) {
    this.models = new RepositoryModels(runtime, serve, pools);
    this.authorize = new BearerToken(token);
  }

  /** Registers the three calls on {@code server} (the gateway's gRPC server). */
  public void register(GrpcServer server) {
    server.callHandler(GRPCInferenceServiceGrpcService.RepositoryIndex, req -> unary(req, this::index));
    server.callHandler(GRPCInferenceServiceGrpcService.RepositoryModelLoad, req -> unary(req, m -> control(
        m.getRepositoryName(), m.getModelName(), m.getParametersMap(), true)
        .thenApply(v -> RepositoryModelLoadResponse.getDefaultInstance())));
    server.callHandler(GRPCInferenceServiceGrpcService.RepositoryModelUnload, req -> unary(req, m -> control(
        m.getRepositoryName(), m.getModelName(), m.getParametersMap(), false)
        .thenApply(v -> RepositoryModelUnloadResponse.getDefaultInstance())));
  }

  private CompletionStage<RepositoryIndexResponse> index(RepositoryIndexRequest m) {
    String repository = m.getRepositoryName();
    if (repository.length() > MAX_NAME_CHARS) {
      return invalid("repository_name: longer than " + MAX_NAME_CHARS + " characters");
    }
    return models.index(m.getReady()).thenApply(all -> {
      RepositoryIndexResponse.Builder out = RepositoryIndexResponse.newBuilder();
      for (RepositoryModels.Entry e : all) {
        if (repository.isEmpty() || repository.equals(e.deployment())) {
          out.addModels(RepositoryIndexResponse.ModelIndex.newBuilder().setName(e.name()).setVersion(e.version())
              .setState(e.state()).setReason(e.reason()));
        }
      }
      return out.build();
    });
  }

  private CompletionStage<Void> control(String repository, String model, Map<String, ?> parameters, boolean load) {
    if (model.isEmpty()) {
      return invalid("model_name: required");
    }
    if (model.length() > MAX_NAME_CHARS || repository.length() > MAX_NAME_CHARS) {
      return invalid((model.length() > MAX_NAME_CHARS ? "model_name" : "repository_name") + ": longer than "
          + MAX_NAME_CHARS + " characters");
    }
    if (!parameters.isEmpty()) {
      String name = parameters.keySet().iterator().next();
      return invalid("parameters." + (name.length() > 64 ? name.substring(0, 64) + "..." : name)
          + ": not supported; models load as their deployment declares them");
    }
    if (!repository.isEmpty() && !models.deploymentOf(model).map(repository::equals).orElse(false)) {
      return CompletableFuture.failedFuture(new InferenceException(InferenceException.Kind.NOT_FOUND,
          "model '" + model + "' is not in repository '" + repository + "'"));
    }
    return load ? models.load(model) : models.unload(model);
  }

  private static <T> CompletionStage<T> invalid(String message) {
    return CompletableFuture.failedFuture(InferenceException.invalid(message));
  }

  private <Q, R> void unary(GrpcServerRequest<Q, R> req, Function<Q, CompletionStage<R>> handler) {
    GrpcServerResponse<Q, R> response = req.response();
    AtomicBoolean answered = new AtomicBoolean();
    req.invalidMessageHandler(invalid -> fail(response, answered,
        InferenceException.invalid("message could not be decoded")));
    req.handler(msg -> {
      if (!authorize.accepts(req.headers().get("authorization"))) {
        if (answered.compareAndSet(false, true)) {
          response.status(GrpcStatus.UNAUTHENTICATED)
              .statusMessage("management API needs a valid token (metadata authorization: Bearer ...)").end();
        }
        return;
      }
      CompletionStage<R> reply;
      try {
        reply = handler.apply(msg);
      } catch (RuntimeException e) {
        reply = CompletableFuture.failedFuture(e);
      }
      reply.whenComplete((r, e) -> {
        if (e != null) {
          fail(response, answered, Futures.unwrapCompletion(e));
        } else if (answered.compareAndSet(false, true)) {
          response.end(r);
        }
      });
    });
  }

  private static void fail(GrpcServerResponse<?, ?> response, AtomicBoolean answered, Throwable t) {
    if (!answered.compareAndSet(false, true)) {
      return;
    }
    if (t instanceof CapacityExceededException c) {
      response.trailers().set(RETRY_AFTER_TRAILER, Long.toString(Math.max(1, c.retryAfter().toSeconds())));
    }
    GrpcStatus status = t instanceof InferenceException ie ? switch (ie.kind()) {
      case INVALID_INPUT -> GrpcStatus.INVALID_ARGUMENT;
      case NOT_FOUND -> GrpcStatus.NOT_FOUND;
      case TOO_LARGE -> GrpcStatus.RESOURCE_EXHAUSTED;
      case UNAVAILABLE -> GrpcStatus.UNAVAILABLE;
      case DEADLINE_EXCEEDED -> GrpcStatus.DEADLINE_EXCEEDED;
      case INTERNAL -> GrpcStatus.INTERNAL;
    } : GrpcStatus.INTERNAL;
    response.status(status).statusMessage(t.getMessage() == null ? "request failed" : t.getMessage()).end();
  }
}
