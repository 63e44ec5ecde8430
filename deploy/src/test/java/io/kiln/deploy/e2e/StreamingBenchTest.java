package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.ModelInferRequest.InferInputTensor;
import io.kiln.protocol.grpc.InferParameter;
import io.kiln.protocol.grpc.InferTensorContents;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.vertx.core.Vertx;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.common.GrpcStatus;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The streaming benchmark ({@code loadtest/bench-streaming.sh}) and its CI-sized run: closed-loop clients stream
 * {@code builtin:chunks} answers from one assembled node, over SSE ({@code generate_stream}) and over gRPC
 * ({@code ModelStreamInfer}, one call per answer), at each concurrency level; each level prints one {@code [bench]}
 * line with the time to first chunk (p50, p99) and chunks per second. Knobs ({@code -Dkiln.bench.<name>}):
 * {@code stream.levels} (CI: {@code 1,4}; the script: {@code 1,16,64}), {@code stream.seconds} per level (CI 1),
 * {@code stream.warmup} seconds (CI 1), {@code stream.chunks} per answer (32), {@code stream.delayMs} per chunk (0).
 * Nothing is asserted about time: the figures depend on the machine and on whatever else runs on it.
 */
@Tag("slow")
class StreamingBenchTest {

  static final int[] LEVELS = BenchStats.ints(BenchStats.knob("stream.levels", "1,4"));
  static final long SECONDS = Long.parseLong(BenchStats.knob("stream.seconds", "1"));
  static final long WARMUP = Long.parseLong(BenchStats.knob("stream.warmup", "1"));
  static final int CHUNKS = Integer.parseInt(BenchStats.knob("stream.chunks", "32"));
  static final int DELAY_MS = Integer.parseInt(BenchStats.knob("stream.delayMs", "0"));

  /** What one level measured. */
  record Level(long streams, long chunks, long errors, BenchStats firstChunk) {
  }

  @Test
  void timeToFirstChunkAndChunkRateOverSseAndGrpc() throws Exception {
    try (ServingCluster cluster = ServingCluster.start("node-1")) {
      cluster.deploy(StreamingFiguresTest.YAML);
      cluster.awaitReady("chunks", 1);
      int http = cluster.node("node-1").httpPort();
      int grpc = cluster.node("node-1").grpcPort();
      Vertx vertx = Vertx.vertx();
      GrpcClient client = GrpcClient.client(vertx);
      try {
        for (int c : LEVELS) {
          for (String protocol : List.of("sse", "grpc")) {
            if (WARMUP > 0) {
              run(protocol, http, grpc, client, c, WARMUP);
            }
            Level l = run(protocol, http, grpc, client, c, SECONDS);
            System.out.println(BenchStats.f("[bench] streaming protocol=%s c=%d chunks=%d: %d streams, %d errors,"
                    + " first chunk p50 %.2f ms p99 %.2f ms, %.0f chunks/s", protocol, c, CHUNKS, l.streams(),
                l.errors(), l.firstChunk().millis(0.50), l.firstChunk().millis(0.99),
                l.chunks() / (double) SECONDS));
            assertThat(l.errors()).as(protocol + " c=" + c).isZero();
            assertThat(l.streams()).as(protocol + " c=" + c).isPositive();
            assertThat(l.chunks()).as("every stream got all its chunks").isEqualTo(l.streams() * CHUNKS);
          }
        }
      } finally {
        ServingCluster.join(client.close().toCompletionStage());
        ServingCluster.join(vertx.close().toCompletionStage());
      }
    }
  }

  private static Level run(String protocol, int http, int grpc, GrpcClient client, int clients, long seconds)
      throws Exception {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    AtomicLong streams = new AtomicLong();
    AtomicLong chunks = new AtomicLong();
    AtomicLong errors = new AtomicLong();
    BenchStats first = new BenchStats();
    if (protocol.equals("grpc")) {
      List<CompletableFuture<Void>> loops = new ArrayList<>();
      for (int i = 0; i < clients; i++) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        grpcLoop(client, SocketAddress.inetSocketAddress(grpc, ServingCluster.HOST), end, streams, chunks, errors,
            first, done);
        loops.add(done);
      }
      CompletableFuture.allOf(loops.toArray(CompletableFuture[]::new)).get(seconds + 120, TimeUnit.SECONDS);
    } else {
      ExecutorService pool = Executors.newFixedThreadPool(clients);
      try {
        List<Future<?>> all = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
          all.add(pool.submit(() -> sseLoop(http, end, streams, chunks, errors, first)));
        }
        for (Future<?> f : all) {
          f.get(seconds + 120, TimeUnit.SECONDS);
        }
      } finally {
        pool.shutdownNow();
      }
    }
    return new Level(streams.get(), chunks.get(), errors.get(), first);
  }

  private static Void sseLoop(int port, long end, AtomicLong streams, AtomicLong chunks, AtomicLong errors,
                              BenchStats first) throws IOException {
    try (Socket s = new Socket(ServingCluster.HOST, port)) {
      s.setTcpNoDelay(true); // else Nagle holds the body behind the headers' delayed ACK (40 ms)
      s.setSoTimeout(120_000);
      BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
      OutputStream out = s.getOutputStream();
      String body = "{\"x\":[0,0],\"parameters\":{\"chunks\":" + CHUNKS + ",\"delay_ms\":" + DELAY_MS + "}}";
      byte[] request = ("POST /v2/models/chunks/generate_stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
          + "\r\nContent-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.US_ASCII);
      while (System.nanoTime() < end) {
        long t0 = System.nanoTime();
        out.write(request);
        out.flush();
        int seen = 0;
        boolean failed = false;
        for (String line = in.readLine(); line != null; line = in.readLine()) {
          if (line.startsWith("HTTP/1.1 ") && !line.startsWith("HTTP/1.1 200")) {
            errors.incrementAndGet();
            return null; // an error answer is not a stream: stop this client (closing its connection)
          } else if (line.startsWith("event: error")) {
            failed = true;
          } else if (line.startsWith("data: ")) {
            if (seen++ == 0) {
              first.add(System.nanoTime() - t0);
            }
          } else if (line.equals("0")) { // the last chunk of the chunked encoding
            in.readLine();
            break;
          }
        }
        if (failed) {
          errors.incrementAndGet();
          return null; // the connection's state is unknown after an error: stop this client
        }
        chunks.addAndGet(seen);
        streams.incrementAndGet();
      }
    }
    return null;
  }

  // One ModelStreamInfer call per answer, the next one started when it ends: a closed loop on the client's event loop.
  private static void grpcLoop(GrpcClient client, SocketAddress at, long end, AtomicLong streams, AtomicLong chunks,
                               AtomicLong errors, BenchStats first, CompletableFuture<Void> done) {
    if (System.nanoTime() >= end) {
      done.complete(null);
      return;
    }
    long t0 = System.nanoTime();
    client.request(at, GRPCInferenceServiceGrpcClient.ModelStreamInfer).onFailure(e -> {
      errors.incrementAndGet();
      done.complete(null);
    }).onSuccess(req -> {
      req.end(request());
      req.response().onFailure(e -> {
        errors.incrementAndGet();
        done.complete(null);
      }).onSuccess(resp -> {
        AtomicLong seen = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        resp.handler(m -> {
          if (!m.getErrorMessage().isEmpty()) {
            failed.incrementAndGet();
          } else if (seen.getAndIncrement() == 0) {
            first.add(System.nanoTime() - t0);
          }
        });
        resp.exceptionHandler(e -> failed.incrementAndGet());
        resp.endHandler(v -> {
          if (failed.get() > 0 || resp.status() != GrpcStatus.OK) {
            errors.incrementAndGet();
            done.complete(null);
            return;
          }
          chunks.addAndGet(seen.get());
          streams.incrementAndGet();
          grpcLoop(client, at, end, streams, chunks, errors, first, done);
        });
      });
    });
  }

  private static ModelInferRequest request() {
    return ModelInferRequest.newBuilder().setModelName("chunks")
        .putParameters("chunks", InferParameter.newBuilder().setInt64Param(CHUNKS).build())
        .putParameters("delay_ms", InferParameter.newBuilder().setInt64Param(DELAY_MS).build())
        .addInputs(InferInputTensor.newBuilder().setName("x").setDatatype("FP32").addShape(1).addShape(2)
            .setContents(InferTensorContents.newBuilder().addFp32Contents(0).addFp32Contents(0)))
        .build();
  }
}
