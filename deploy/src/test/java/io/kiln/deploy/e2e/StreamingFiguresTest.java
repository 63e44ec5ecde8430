package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Rough figures of the streaming path, not a benchmark (it shares the machine with the server and with whatever
 * else runs): closed-loop clients at concurrency 1, 16 and 64 each stream {@code builtin:chunks} answers of
 * {@value #CHUNKS} chunks over SSE from one node's gateway; printed are the time to first chunk (p50, p99) and
 * chunks per second. It loads the machine for seconds, so it runs only when asked:
 * {@code -Dkiln.reliability.stream.seconds=N} (seconds per level; 0, the default, skips it).
 */
@Tag("slow")
class StreamingFiguresTest {

  static final int CHUNKS = 32;
  static final long SECONDS = io.kiln.gateway.support.Figures.knob("stream.seconds", 0);
  static final String YAML = """
      deployments:
        - name: chunks
          version: "1"
          model:
            uri: builtin:chunks
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: x, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 2, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 16, max_batch_delay_ms: 1}
          queue: {max_queued: 512, timeout_ms: 60000}
      """;

  @Test
  void timeToFirstChunkAndChunkRateAtThreeConcurrencies() throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(SECONDS > 0, "figures only when -Dkiln.reliability.stream.seconds=N");
    try (ServingCluster cluster = ServingCluster.start("node-1")) {
      cluster.deploy(YAML);
      cluster.awaitReady("chunks", 1);
      int port = cluster.node("node-1").httpPort();
      for (int c : new int[] {1, 16, 64}) {
        run(port, c, 1); // warm
        Level l = run(port, c, SECONDS);
        System.out.printf(Locale.ROOT, "streaming c=%d: %d streams, first chunk p50 %.2f ms p99 %.2f ms, %.0f chunks/s%n",
            c, l.streams, l.p(0.50), l.p(0.99), l.chunks / (double) SECONDS);
        assertThat(l.streams).isPositive();
      }
    }
  }

  record Level(long streams, long chunks, List<Long> ttfc) {
    double p(double q) {
      return ttfc.get(Math.min(ttfc.size() - 1, (int) (q * ttfc.size()))) / 1e6;
    }
  }

  private static Level run(int port, int clients, long seconds) throws Exception {
    long end = System.nanoTime() + seconds * 1_000_000_000L;
    AtomicLong streams = new AtomicLong();
    AtomicLong chunks = new AtomicLong();
    List<Long> ttfc = Collections.synchronizedList(new ArrayList<>());
    ExecutorService pool = Executors.newFixedThreadPool(clients);
    List<Future<?>> all = new ArrayList<>();
    for (int i = 0; i < clients; i++) {
      all.add(pool.submit(() -> {
        try (Socket s = new Socket(ServingCluster.HOST, port)) {
          s.setTcpNoDelay(true); // else Nagle holds the body behind the headers' delayed ACK (40 ms)
          BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
          OutputStream out = s.getOutputStream();
          String body = "{\"x\":[0,0],\"parameters\":{\"chunks\":" + CHUNKS + "}}";
          byte[] request = ("POST /v2/models/chunks/generate_stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
              + "\r\nContent-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.US_ASCII);
          while (System.nanoTime() < end) {
            long t0 = System.nanoTime();
            out.write(request);
            out.flush();
            int seen = 0;
            for (String line = in.readLine(); line != null; line = in.readLine()) {
              if (line.startsWith("data: ")) {
                if (seen++ == 0) {
                  ttfc.add(System.nanoTime() - t0);
                }
              } else if (line.equals("0")) { // the last chunk of the chunked encoding
                in.readLine();
                break;
              }
            }
            chunks.addAndGet(seen);
            streams.incrementAndGet();
          }
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
        return null;
      }));
    }
    for (Future<?> f : all) {
      f.get();
    }
    pool.shutdown();
    List<Long> sorted = new ArrayList<>(ttfc);
    Collections.sort(sorted);
    return new Level(streams.get(), chunks.get(), sorted);
  }
}
