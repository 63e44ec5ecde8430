package io.kiln.pipelines;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pipelines.impl.Sources;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("slow")
class NodeCacheTest {

  static Vertx vertx;
  static HttpServer server;
  static final AtomicInteger REQUESTS = new AtomicInteger();

  @TempDir
  Path tmp;

  final AtomicLong clock = new AtomicLong(1_000);

  @BeforeAll
  static void startServer() throws Exception {
    vertx = Vertx.vertx();
    server = vertx.createHttpServer().requestHandler(req -> {
      REQUESTS.incrementAndGet();
      String path = req.path();
      if (path.startsWith("/slow/")) {
        vertx.setTimer(300, id -> req.response().end("slow content " + path));
      } else if (path.startsWith("/missing")) {
        req.response().setStatusCode(404).end("nope");
      } else if (path.startsWith("/big")) {
        req.response().end("x".repeat(5000));
      } else {
        req.response().end("content of " + path);
      }
    }).listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  @AfterAll
  static void stopServer() {
    vertx.close().toCompletionStage().toCompletableFuture().join();
  }

  static String http(String path) {
    return "http://127.0.0.1:" + server.actualPort() + path;
  }

  NodeCache cache(long maxBytes) {
    return new NodeCache("n1", NodeCache.Options.of(tmp.resolve("cache"), maxBytes, List.of(tmp.resolve("data"))),
        clock::get);
  }

  Path input(String name, int bytes) throws IOException {
    Path dir = Files.createDirectories(tmp.resolve("data"));
    Path p = dir.resolve(name);
    byte[] data = new byte[bytes];
    for (int i = 0; i < bytes; i++) {
      data[i] = (byte) (name.hashCode() + i);
    }
    Files.write(p, data);
    return p;
  }

  static String sha256(byte[] data) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
  }

  List<String> leftovers() throws IOException {
    try (var s = Files.list(tmp.resolve("cache").resolve("tmp"))) {
      return s.map(p -> p.getFileName().toString()).toList();
    }
  }

  @Test
  void keyIsTheSha256OfTheUri() throws Exception {
    String uri = "file:///data/a.bin";
    assertThat(NodeCache.keyOf(uri)).isEqualTo(sha256(uri.getBytes(StandardCharsets.UTF_8)));
    assertThat(NodeCache.isKey(NodeCache.keyOf(uri))).isTrue();
    assertThat(NodeCache.isKey("file:///data/a.bin")).isFalse();
    assertThat(NodeCache.keyOf("file:///data/b.bin")).isNotEqualTo(NodeCache.keyOf(uri));
  }

  @Test
  void fetchWritesAWholeFileOnceAndReusesIt() throws Exception {
    Path in = input("a.bin", 1000);
    String uri = in.toUri().toString();
    NodeCache c = cache(1 << 20);
    CacheEntry e = c.fetch(uri, 10_000);
    assertThat(e.key()).isEqualTo(NodeCache.keyOf(uri));
    assertThat(e.bytes()).isEqualTo(1000);
    assertThat(e.sha256()).isEqualTo(sha256(Files.readAllBytes(in)));
    assertThat(e.nodeId()).isEqualTo("n1");
    assertThat(Files.readAllBytes(Path.of(e.path()))).isEqualTo(Files.readAllBytes(in));
    assertThat(Path.of(e.path()).getParent()).isEqualTo(tmp.resolve("cache"));
    assertThat(leftovers()).isEmpty();
    clock.set(2_000);
    assertThat(c.fetch(uri, 10_000)).isEqualTo(e); // cached: not fetched again
    assertThat(c.usedBytes()).isEqualTo(1000);
  }

  @Test
  void aRestartAdoptsWholeEntriesAndDropsEveryPartialWrite() throws Exception {
    NodeCache first = cache(1 << 20);
    CacheEntry a = first.fetch(input("a.bin", 100).toUri().toString(), 1000);
    CacheEntry b = first.fetch(input("b.bin", 200).toUri().toString(), 1000);
    Path dir = tmp.resolve("cache");
    // What a crash can leave: a temporary file, metadata without data, and data without metadata.
    Files.writeString(dir.resolve("tmp").resolve(a.key() + ".x.part"), "partial");
    String orphan = NodeCache.keyOf("file:///gone");
    Files.writeString(dir.resolve(orphan + ".json"), "{}");
    String lonely = NodeCache.keyOf("file:///lonely");
    Files.writeString(dir.resolve(lonely), "data");
    // And a data file whose size does not match its metadata (truncated).
    Files.write(Path.of(b.path()), new byte[10]);

    NodeCache second = cache(1 << 20);
    assertThat(second.entries()).containsExactly(a);
    assertThat(leftovers()).isEmpty();
    try (var s = Files.list(dir)) {
      assertThat(s.map(p -> p.getFileName().toString()).sorted().toList())
          .containsExactly(a.key(), a.key() + ".json", "tmp");
    }
  }

  @Test
  void leastRecentlyUsedEntriesAreEvictedToStayUnderTheCap() throws Exception {
    NodeCache c = cache(250);
    List<String> removed = new CopyOnWriteArrayList<>();
    List<String> added = new CopyOnWriteArrayList<>();
    c.addListener(new NodeCache.Listener() {
      @Override
      public void added(CacheEntry entry) {
        added.add(entry.key());
      }

      @Override
      public void removed(String key) {
        removed.add(key);
      }
    });
    CacheEntry a = c.fetch(input("a", 100).toUri().toString(), 1000);
    CacheEntry b = c.fetch(input("b", 100).toUri().toString(), 1000);
    assertThat(c.get(a.key())).isPresent(); // a is now more recent than b
    CacheEntry d = c.fetch(input("d", 100).toUri().toString(), 1000);
    assertThat(c.entries()).extracting(CacheEntry::key).containsExactly(a.key(), d.key());
    assertThat(removed).containsExactly(b.key());
    assertThat(added).containsExactly(a.key(), b.key(), d.key());
    assertThat(Files.exists(Path.of(b.path()))).isFalse();
    assertThat(c.usedBytes()).isEqualTo(200);
  }

  @Test
  void anEntryInUseIsNeverEvicted() throws Exception {
    NodeCache c = cache(250);
    CacheEntry a = c.fetch(input("a", 100).toUri().toString(), 1000);
    CacheEntry b = c.fetch(input("b", 100).toUri().toString(), 1000);
    try (NodeCache.Lease la = c.open(a.key()); NodeCache.Lease lb = c.open(b.key())) {
      assertThat(la.path()).hasBinaryContent(Files.readAllBytes(tmp.resolve("data").resolve("a")));
      String third = input("c", 100).toUri().toString();
      assertThatThrownBy(() -> c.fetch(third, 1000)).isInstanceOf(CacheFullException.class)
          .hasMessageContaining("the cache of node n1 is full");
      assertThat(c.remove(a.key())).isFalse();
    }
    assertThat(c.entries()).hasSize(2);
    CacheEntry d = c.fetch(input("d", 100).toUri().toString(), 1000); // unpinned now: a goes
    assertThat(c.entries()).extracting(CacheEntry::key).containsExactly(b.key(), d.key());
    assertThatThrownBy(() -> c.open(a.key())).isInstanceOf(NoSuchFileException.class);
  }

  @Test
  void sizeLimits() throws Exception {
    NodeCache c = cache(500);
    String big = input("big", 600).toUri().toString();
    assertThatThrownBy(() -> c.fetch(big, 10_000)).isInstanceOf(CacheFullException.class)
        .hasMessageContaining("more than the whole cache of node n1 (500 bytes)");
    assertThatThrownBy(() -> c.fetch(big, 100)).isInstanceOf(IOException.class)
        .hasMessageContaining("is 600 bytes; the step allows at most 100");
    assertThatThrownBy(() -> c.fetch(http("/big"), 1000)).isInstanceOf(IOException.class)
        .hasMessageContaining("the step allows at most 1000");
    assertThat(c.entries()).isEmpty();
    assertThat(leftovers()).isEmpty();
  }

  @Test
  void filesOutsideTheAllowedRootsAreRefused() throws Exception {
    NodeCache c = cache(1 << 20);
    Path outside = Files.writeString(tmp.resolve("secret.txt"), "secret");
    assertThatThrownBy(() -> c.fetch(outside.toUri().toString(), 1000)).isInstanceOf(IOException.class)
        .hasMessageContaining("outside the folders this node may read inputs from");
    Path link = Files.createDirectories(tmp.resolve("data")).resolve("link.txt");
    Files.createSymbolicLink(link, outside);
    assertThatThrownBy(() -> c.fetch(link.toUri().toString(), 1000)).isInstanceOf(IOException.class)
        .hasMessageContaining("outside the folders");
    assertThatThrownBy(() -> c.fetch(tmp.resolve("data").resolve("none").toUri().toString(), 1000))
        .hasMessageContaining("no such file");
    assertThatThrownBy(() -> c.fetch("ftp://example.com/x", 1000)).isInstanceOf(IllegalArgumentException.class);
    assertThat(c.entries()).isEmpty();
  }

  @Test
  void httpFetchesAndTheirFailures() throws Exception {
    NodeCache c = cache(1 << 20);
    CacheEntry e = c.fetch(http("/one"), 1000);
    assertThat(Files.readString(Path.of(e.path()))).isEqualTo("content of /one");
    assertThat(e.sha256()).isEqualTo(sha256("content of /one".getBytes(StandardCharsets.UTF_8)));
    assertThatThrownBy(() -> c.fetch(http("/missing"), 1000)).isInstanceOf(IOException.class)
        .hasMessageContaining("answered HTTP 404");
  }

  @Test
  void concurrentFetchesOfOneUriShareOneDownload() throws Exception {
    NodeCache c = cache(1 << 20);
    String uri = http("/slow/shared");
    int before = REQUESTS.get();
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<CacheEntry>> all = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        all.add(pool.submit(() -> c.fetch(uri, 1000)));
      }
      CacheEntry first = all.get(0).get(30, TimeUnit.SECONDS);
      for (Future<CacheEntry> f : all) {
        assertThat(f.get(30, TimeUnit.SECONDS)).isEqualTo(first);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(REQUESTS.get() - before).isEqualTo(1);
  }

  @Test
  void uriSchemes() {
    assertThat(Sources.scheme("file:///a")).isEqualTo("file");
    assertThat(Sources.scheme("HTTPS://x/y")).isEqualTo("https");
    assertThatThrownBy(() -> Sources.scheme("s3://bucket/key")).hasMessageContaining("only file://, http:// and https://");
    assertThatThrownBy(() -> Sources.scheme("not a uri")).hasMessageContaining("is not a valid URI");
  }
}
