package io.kiln.gateway.impl;

import io.kiln.gateway.BearerToken;
import io.kiln.pools.InferenceException;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcService;
import io.kiln.protocol.grpc.SystemSharedMemoryRegisterResponse;
import io.kiln.protocol.grpc.SystemSharedMemoryStatusResponse;
import io.kiln.protocol.grpc.SystemSharedMemoryUnregisterResponse;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.server.GrpcServer;
import io.vertx.grpc.server.GrpcServerRequest;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * Triton's system shared-memory extension over HTTP ({@code /v2/systemsharedmemory/...}) and gRPC
 * ({@code SystemSharedMemoryStatus}, {@code Register}, {@code Unregister}). Every call needs the management token
 * when the gateway has one: a registered region lets whoever sends inference requests read and write that memory
 * object, so choosing which objects the server maps is a management act, like loading a model (docs/shared-memory.md).
 * Errors are {@code {"error": ...}} with 400 (401 without the token) over HTTP, INVALID_ARGUMENT (UNAUTHENTICATED)
 * over gRPC. Handlers run on the event loop; mapping a region runs on a worker thread.
 */
final class SharedMemoryApi {

  static final String EXTENSION = "system_shared_memory";
  private static final String PREFIX = "/v2/systemsharedmemory";
  private static final int MAX_REGISTER_BODY = 64 * 1024;

  private final Vertx vertx;
  private final GatewayContext gw;
  private final SharedMemoryRegions regions;
  private final BearerToken token;

  SharedMemoryApi(Vertx vertx, GatewayContext gw, SharedMemoryRegions regions) {
    this.vertx = vertx;
    this.gw = gw;
    this.regions = regions;
    this.token = new BearerToken(gw.options().managementToken());
  }

  void register(io.vertx.ext.web.Router r) {
    r.get(PREFIX + "/status").handler(ctx -> guarded(ctx, () -> statusJson(regions.status())));
    r.get(PREFIX + "/region/:name/status").handler(ctx ->
        guarded(ctx, () -> statusJson(List.of(regions.status(ctx.pathParam("name"))))));
    r.post(PREFIX + "/region/:name/register").handler(ExpectContinue.body(MAX_REGISTER_BODY)).handler(this::register);
    r.post(PREFIX + "/unregister").handler(ctx -> guarded(ctx, () -> {
      regions.unregisterAll();
      return new JsonObject();
    }));
    r.post(PREFIX + "/region/:name/unregister").handler(ctx -> guarded(ctx, () -> {
      regions.unregister(ctx.pathParam("name"));
      return new JsonObject();
    }));
  }

  private void register(RoutingContext ctx) {
    if (!authorized(ctx)) {
      return;
    }
    String name = ctx.pathParam("name");
    JsonObject body;
    try {
      Buffer b = ctx.body().buffer();
      body = b == null || b.length() == 0 ? new JsonObject() : new JsonObject(b);
    } catch (DecodeException | ClassCastException e) {
      error(ctx, 400, "body: must be a JSON object {\"key\", \"offset\", \"byte_size\"}");
      return;
    }
    String key;
    long offset;
    long byteSize;
    try {
      key = string(body, "key");
      offset = body.containsKey("offset") ? number(body, "offset") : 0;
      byteSize = number(body, "byte_size");
    } catch (InferenceException e) {
      error(ctx, 400, e.getMessage());
      return;
    }
    blocking(() -> regions.register(name, key, offset, byteSize)).onComplete(ar -> {
      if (ar.succeeded()) {
        send(ctx, 200, new JsonObject());
      } else {
        fail(ctx, ar.cause());
      }
    });
  }

  private static String string(JsonObject body, String field) {
    Object v = body.getValue(field);
    if (!(v instanceof String s)) {
      throw InferenceException.invalid(field + ": " + (v == null ? "missing" : "must be a string"));
    }
    return s;
  }

  private static long number(JsonObject body, String field) {
    Object v = body.getValue(field);
    if (v instanceof Integer || v instanceof Long) {
      return ((Number) v).longValue();
    }
    throw InferenceException.invalid(field + ": " + (v == null ? "missing" : "must be an integer"));
  }

  private static JsonArray statusJson(List<SharedMemoryRegions.Status> all) {
    JsonArray out = new JsonArray();
    for (SharedMemoryRegions.Status s : all) {
      out.add(new JsonObject().put("name", s.name()).put("key", s.key()).put("offset", s.offset())
          .put("byte_size", s.byteSize()));
    }
    return out;
  }

  private void guarded(RoutingContext ctx, Callable<Object> work) {
    if (!authorized(ctx)) {
      return;
    }
    Object reply;
    try {
      reply = work.call();
    } catch (Exception e) {
      fail(ctx, e);
      return;
    }
    send(ctx, 200, reply);
  }

  private boolean authorized(RoutingContext ctx) {
    if (token.accepts(ctx.request().getHeader(HttpHeaders.AUTHORIZATION))) {
      return true;
    }
    error(ctx, 401, "the shared-memory extension needs the management token (Authorization: Bearer ...)");
    return false;
  }

  private void fail(RoutingContext ctx, Throwable e) {
    HttpInfer.fail(gw, ctx.response(), gw.errors().map(e));
  }

  private void error(RoutingContext ctx, int status, String message) {
    HttpInfer.error(gw, ctx.response(), status, message);
  }

  private static void send(RoutingContext ctx, int status, Object json) {
    Buffer body = json instanceof JsonArray a ? a.toBuffer() : ((JsonObject) json).toBuffer();
    HttpInfer.send(ctx.response(), status, body);
  }

  private <T> Future<T> blocking(Callable<T> work) {
    return vertx.executeBlocking(work, false);
  }

  /** The three gRPC calls on the gateway's gRPC server. */
  void register(GrpcServer server) {
    server.callHandler(GRPCInferenceServiceGrpcService.SystemSharedMemoryStatus, req -> unary(req, m -> {
      SystemSharedMemoryStatusResponse.Builder out = SystemSharedMemoryStatusResponse.newBuilder();
      List<SharedMemoryRegions.Status> all = m.getName().isEmpty() ? regions.status()
          : List.of(regions.status(m.getName()));
      for (SharedMemoryRegions.Status s : all) {
        out.putRegions(s.name(), SystemSharedMemoryStatusResponse.RegionStatus.newBuilder().setName(s.name())
            .setKey(s.key()).setOffset(s.offset()).setByteSize(s.byteSize()).build());
      }
      return Future.succeededFuture(out.build());
    }));
    server.callHandler(GRPCInferenceServiceGrpcService.SystemSharedMemoryRegister, req -> unary(req, m -> {
      // uint64 fields: a value over Long.MAX_VALUE reads negative, which register refuses by name.
      return blocking(() -> regions.register(m.getName(), m.getKey(), m.getOffset(), m.getByteSize()))
          .map(s -> SystemSharedMemoryRegisterResponse.getDefaultInstance());
    }));
    server.callHandler(GRPCInferenceServiceGrpcService.SystemSharedMemoryUnregister, req -> unary(req, m -> {
      if (m.getName().isEmpty()) {
        regions.unregisterAll();
      } else {
        regions.unregister(m.getName());
      }
      return Future.succeededFuture(SystemSharedMemoryUnregisterResponse.getDefaultInstance());
    }));
  }

  private <Q, R> void unary(GrpcServerRequest<Q, R> req, java.util.function.Function<Q, Future<R>> handler) {
    req.invalidMessageHandler(invalid -> req.response().status(GrpcStatus.INVALID_ARGUMENT)
        .statusMessage("message could not be decoded").end());
    req.handler(msg -> {
      if (!token.accepts(req.headers().get("authorization"))) {
        req.response().status(GrpcStatus.UNAUTHENTICATED)
            .statusMessage("the shared-memory extension needs the management token (metadata authorization: Bearer ...)")
            .end();
        return;
      }
      Future<R> reply;
      try {
        reply = handler.apply(msg);
      } catch (RuntimeException e) {
        reply = Future.failedFuture(e);
      }
      reply.onComplete(ar -> {
        if (ar.succeeded()) {
          req.response().end(ar.result());
        } else {
          ErrorMapper.Failure f = gw.errors().map(ar.cause());
          req.response().status(ErrorMapper.grpcStatus(f.kind())).statusMessage(f.message()).end();
        }
      });
    });
  }
}
