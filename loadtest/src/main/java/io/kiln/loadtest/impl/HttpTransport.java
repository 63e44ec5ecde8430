package io.kiln.loadtest.impl;

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
    List<RequestMix.Entry> entries = options.mix().entries();
    requests = new RequestOptions[entries.size()];
    bodies = new Buffer[entries.size()];
    String uri = "/v2/models/" + options.model() + "/infer";
    long timeoutMs = options.requestTimeout().toMillis();
    for (int i = 0; i < requests.length; i++) {
      RequestTemplate t = entries.get(i).template();
      RequestOptions r = new RequestOptions().setMethod(HttpMethod.POST).setHost(options.target().getHost())
          .setPort(options.port()).setURI(uri).setIdleTimeout(timeoutMs);
      if (binary) {
        List<TensorData> inputs = t.inputs();
        byte[] header = OipJson.binaryHeader(inputs);
        Buffer body = Buffer.buffer(header);
        for (TensorData in : inputs) {
          byte[] raw = new byte[in.byteSize()];
          in.raw().get(raw);
          body.appendBytes(raw);
        }
        r.putHeader("content-type", "application/octet-stream").putHeader(HEADER_LENGTH, Integer.toString(header.length));
        bodies[i] = body;
      } else {
        r.putHeader("content-type", "application/json");
        bodies[i] = Buffer.buffer(t.json());
      }
      requests[i] = r;
    }
    client = vertx.createHttpClient(
        // Kiln closes a connection idle for 30 s; dropping ours at 15 s means we never reuse one it is closing.
        new HttpClientOptions().setKeepAlive(true).setKeepAliveTimeout(15).setTcpNoDelay(true).setPipelining(false)
            .setMaxRedirects(0)
            // The TCP connect is bounded here, not per request: Vert.x 5.0 arms a pool-wait timer for a request's
            // connect timeout that can fire after the wait was served ("Promise already completed" ERRORs).
            .setConnectTimeout((int) Math.min(timeoutMs, Integer.MAX_VALUE)),
        new PoolOptions().setHttp1MaxSize(options.connections()).setMaxWaitQueueSize(-1));
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
