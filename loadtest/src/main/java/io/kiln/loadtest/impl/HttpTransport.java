package io.kiln.loadtest.impl;

import io.kiln.loadtest.HttpCall;
import io.kiln.loadtest.LoadOptions;
import io.kiln.loadtest.RequestMix;
import io.kiln.loadtest.RequestTemplate;
import io.kiln.loadtest.TensorData;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * OIP v2 over HTTP/1.1 keep-alive connections, JSON or binary-extension bodies. A pool of
 * {@code connections} connections; requests beyond that wait in the pool's unbounded queue (the
 * open-loop driver bounds how many it hands over).
 */
final class HttpTransport implements Transport {
  static final String HEADER_LENGTH = "Inference-Header-Content-Length";

  private final HttpClientAgent client;
  private final RequestOptions[] requests;
  private final Buffer[] bodies;

  HttpTransport(Vertx vertx, LoadOptions options, boolean binary) {
    HttpCall[] calls = calls(options, binary);
    requests = new RequestOptions[calls.length];
    bodies = new Buffer[calls.length];
    long timeoutMs = options.requestTimeout().toMillis();
    for (int i = 0; i < calls.length; i++) {
      RequestOptions r = new RequestOptions().setMethod(HttpMethod.POST).setHost(options.target().getHost())
          .setPort(options.port()).setURI(calls[i].path()).setIdleTimeout(timeoutMs);
      calls[i].headers().forEach(r::putHeader);
      requests[i] = r;
      bodies[i] = Buffer.buffer(calls[i].body());
    }
    client = client(vertx, options);
  }

  /** The generator's HTTP/1.1 client: keep-alive connections, {@code connections} of them per server. */
  static HttpClientAgent client(Vertx vertx, LoadOptions options) {
    long timeoutMs = Math.max(1, options.requestTimeout().toMillis());
    return vertx.createHttpClient(
        // Kiln closes a connection idle for 30 s; dropping ours at 15 s means we never reuse one it is closing.
        new HttpClientOptions().setKeepAlive(true).setKeepAliveTimeout(15).setTcpNoDelay(true).setPipelining(false)
            .setMaxRedirects(0)
            // The TCP connect is bounded here, not per request: Vert.x 5.0 arms a pool-wait timer for a request's
            // connect timeout that can fire after the wait was served ("Promise already completed" ERRORs).
            .setConnectTimeout((int) Math.min(timeoutMs, Integer.MAX_VALUE)),
        new PoolOptions().setHttp1MaxSize(options.connections()).setMaxWaitQueueSize(-1));
  }

  /** The mix's requests, one per entry: JSON bodies, or the binary extension's header and raw tensors. */
  static HttpCall[] calls(LoadOptions options, boolean binary) {
    List<RequestMix.Entry> entries = options.mix().entries();
    HttpCall[] calls = new HttpCall[entries.size()];
    String uri = "/v2/models/" + options.model() + "/infer";
    for (int i = 0; i < calls.length; i++) {
      RequestTemplate t = entries.get(i).template();
      if (binary) {
        List<TensorData> inputs = t.inputs();
        byte[] header = OipJson.binaryHeader(inputs);
        Buffer body = Buffer.buffer(header);
        for (TensorData in : inputs) {
          byte[] raw = new byte[in.byteSize()];
          in.raw().get(raw);
          body.appendBytes(raw);
        }
        calls[i] = new HttpCall(uri, body.getBytes(), Map.of("content-type", "application/octet-stream",
            HEADER_LENGTH, Integer.toString(header.length)));
      } else {
        calls[i] = HttpCall.json(uri, t.json());
      }
    }
    return calls;
  }

  @Override
  public void send(int entry, Consumer<Outcome> done) {
    Buffer body = bodies[entry];
    client.request(requests[entry])
        .compose(req -> req.send(body))
        // end() discards the body as it streams in: a huge response cannot exhaust the generator's memory.
        .compose(resp -> resp.end().map(ignored -> Outcome.http(resp.statusCode())))
        .onComplete(ar -> done.accept(ar.succeeded() ? ar.result() : Outcome.failure(ar.cause())));
  }

  @Override
  public Future<Void> close() {
    return client.close();
  }
}
