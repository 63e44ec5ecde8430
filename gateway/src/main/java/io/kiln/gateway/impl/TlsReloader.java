package io.kiln.gateway.impl;

import io.kiln.gateway.TlsFiles;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.net.PemKeyCertOptions;
import io.vertx.core.net.ServerSSLOptions;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the gateway's certificate from its PEM files and swaps it on every server when the files' content
 * changes (read every {@link TlsFiles#reloadPeriod()} on a worker thread): connections opened afterwards get
 * the new certificate, open ones keep theirs. A change that does not load (a half-written file, a key that
 * does not match) is logged and the old certificate stays in force until the files are whole again.
 */
final class TlsReloader {

  private static final Logger LOG = LoggerFactory.getLogger(TlsReloader.class);

  private final Vertx vertx;
  private final TlsFiles files;
  private final List<Server> servers = new CopyOnWriteArrayList<>();
  private final AtomicLong reloads = new AtomicLong();
  private final AtomicLong refusals = new AtomicLong();
  private volatile TlsFiles.Pem applied;
  private volatile TlsFiles.Pem refused;
  private long timer = -1;

  /** Reads the files now: a missing or unreadable file fails the gateway's start, naming it. */
  TlsReloader(Vertx vertx, TlsFiles files) {
    this.vertx = vertx;
    this.files = files;
    this.applied = files.read();
  }

  /** {@code options} made to serve TLS with the current files; h2 by ALPN when {@code http2}, else HTTP/1.1. */
  HttpServerOptions secure(HttpServerOptions options, boolean http2) {
    return options.setSsl(true).setKeyCertOptions(keyCert(applied)).setUseAlpn(http2)
        .setAlpnVersions(http2 ? List.of(HttpVersion.HTTP_2) : List.of(HttpVersion.HTTP_1_1));
  }

  /** Swaps the certificate of {@code server} too from now on. */
  void watch(HttpServer server, boolean http2) {
    servers.add(new Server(server, http2));
  }

  synchronized void start() {
    if (timer < 0) {
      timer = vertx.setPeriodic(files.reloadPeriod().toMillis(), id -> check());
    }
  }

  synchronized void stop() {
    if (timer >= 0) {
      vertx.cancelTimer(timer);
      timer = -1;
    }
  }

  /** How many times a changed certificate has been put in force. */
  long reloads() {
    return reloads.get();
  }

  /** How many changed versions of the files could not be loaded (each counted once). */
  long refusals() {
    return refusals.get();
  }

  private void check() {
    vertx.executeBlocking(files::read, false).onComplete(ar -> {
      if (ar.failed()) {
        warnOnce(null, "cannot read the TLS files (" + ar.cause().getMessage() + "); serving the previous certificate");
        return;
      }
      TlsFiles.Pem now = ar.result();
      if (now.equals(applied) || now.equals(refused)) {
        return;
      }
      apply(now).onSuccess(v -> {
        applied = now;
        refused = null;
        reloads.incrementAndGet();
        LOG.info("TLS certificate reloaded from {} on {} server(s)", files.certChain(), servers.size());
      }).onFailure(err -> warnOnce(now, "the changed TLS files do not load (" + err.getMessage()
          + "); serving the previous certificate"));
    });
  }

  private Future<Void> apply(TlsFiles.Pem pem) {
    List<Future<Boolean>> updates = new java.util.ArrayList<>();
    for (Server s : servers) {
      ServerSSLOptions ssl = new ServerSSLOptions().setKeyCertOptions(keyCert(pem)).setUseAlpn(s.http2())
          .setApplicationLayerProtocols(List.of(s.http2() ? "h2" : "http/1.1"));
      updates.add(s.server().updateSSLOptions(ssl, true));
    }
    return Future.all(updates).mapEmpty();
  }

  private void warnOnce(TlsFiles.Pem pem, String message) {
    if (pem == null || !pem.equals(refused)) {
      LOG.warn(message);
      refusals.incrementAndGet();
    }
    if (pem != null) {
      refused = pem;
    }
  }

  private static PemKeyCertOptions keyCert(TlsFiles.Pem pem) {
    return new PemKeyCertOptions().setCertValue(Buffer.buffer(pem.certChain())).setKeyValue(Buffer.buffer(pem.privateKey()));
  }

  private record Server(HttpServer server, boolean http2) {
  }
}
