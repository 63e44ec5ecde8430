package io.kiln.pipelines;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Groups of inputs fetched into a real node cache on disk: entries appear only at the commit (data forced
 * first), an input that fails fails alone, duplicates and concurrent fetches share one download, and nothing
 * is left claimed or on disk after a close.
 */
class CacheGroupTest {

  @TempDir
  Path tmp;

  final AtomicLong clock = new AtomicLong(1_000);

  NodeCache cache(long maxBytes) {
    return new NodeCache("n1", NodeCache.Options.of(tmp.resolve("cache"), maxBytes, List.of(tmp.resolve("data"))),
        clock::get);
  }

  String input(String name, int bytes) throws IOException {
    Path dir = Files.createDirectories(tmp.resolve("data"));
    byte[] data = new byte[bytes];
    for (int i = 0; i < bytes; i++) {
      data[i] = (byte) (name.hashCode() + i);
    }
    return Files.write(dir.resolve(name), data).toUri().toString();
  }

  List<String> leftovers() throws IOException {
    try (var s = Files.list(tmp.resolve("cache").resolve("tmp"))) {
      return s.map(p -> p.getFileName().toString()).toList();
    }
  }

  @Test
  void aGroupsEntriesAppearAtItsCommitAndAFailureFailsAlone() throws Exception {
    NodeCache c = cache(1 << 20);
    String before = input("before.bin", 10);
    c.fetch(before, 1 << 20);
    List<String> uris = List.of(input("a.bin", 100), tmp.resolve("data/none.bin").toUri().toString(), before,
        input("b.bin", 3000));
    List<CacheEntry> added = new ArrayList<>();
    c.addListener(new NodeCache.Listener() {
      @Override
      public void added(CacheEntry entry) {
        added.add(entry);
      }

      @Override
      public void removed(String key) {
      }
    });
    try (CacheGroup g = c.download(uris, 1 << 20, 1000)) {
      assertThat(g.size()).isEqualTo(4);
      assertThat(g.item(0).data()).as("small: kept").hasSize(100);
      assertThat(g.item(0).entry()).as("not in the cache before the commit").isNull();
      assertThat(c.get(NodeCache.keyOf(uris.get(0)))).isEmpty();
      assertThat(g.item(1).error()).hasMessageContaining("no such file");
      assertThat(g.item(2).entry()).as("cached before").isNotNull();
      assertThat(g.item(3).data()).as("over the keep limit").isNull();
      assertThat(leftovers()).as("two downloads waiting for their commit").hasSize(2);
      List<CacheGroup.Item> done = g.commit();
      assertThat(done.get(0).entry().bytes()).isEqualTo(100);
      assertThat(done.get(1).entry()).isNull();
      assertThat(done.get(3).entry().bytes()).isEqualTo(3000);
      assertThat(Files.readAllBytes(Path.of(done.get(3).entry().path()))).hasSize(3000);
    }
    assertThat(added).extracting(CacheEntry::uri).containsExactly(uris.get(0), uris.get(3));
    assertThat(c.usedBytes()).isEqualTo(3110);
    assertThat(leftovers()).isEmpty();
    // A restart adopts what the group put in place.
    assertThat(cache(1 << 20).entries()).extracting(CacheEntry::uri).contains(uris.get(0), uris.get(3), before);
  }

  @Test
  void duplicatesAndConcurrentFetchesShareTheGroupsDownload() throws Exception {
    NodeCache c = cache(1 << 20);
    String a = input("a.bin", 64);
    CompletableFuture<CacheEntry> other;
    try (CacheGroup g = c.download(List.of(a, a), 1 << 20, 1000)) {
      // Another thread fetching the URI now waits for this group rather than downloading it again.
      other = CompletableFuture.supplyAsync(() -> {
        try {
          return c.fetch(a, 1 << 20);
        } catch (IOException e) {
          throw new RuntimeException(e);
        }
      });
      assertThat(leftovers()).hasSize(1);
      List<CacheGroup.Item> done = g.commit();
      assertThat(done.get(0).entry()).isEqualTo(done.get(1).entry());
    }
    assertThat(other.get(30, TimeUnit.SECONDS).key()).isEqualTo(NodeCache.keyOf(a));
    assertThat(c.entries()).hasSize(1);
    assertThat(c.usedBytes()).isEqualTo(64);
  }

  @Test
  void closingWithoutACommitCommitsAndLeavesNothingClaimed() throws Exception {
    NodeCache c = cache(1 << 20);
    String a = input("a.bin", 10);
    try (CacheGroup g = c.download(List.of(a), 1 << 20, 0)) {
      assertThat(g.item(0).data()).isNull();
    }
    assertThat(c.get(NodeCache.keyOf(a))).isPresent();
    assertThat(leftovers()).isEmpty();
    // The URI is not left claimed: a later group finds it cached.
    try (CacheGroup again = c.download(List.of(a), 1 << 20, 0)) {
      assertThat(again.item(0).entry()).isNotNull();
    }
  }

  @Test
  void anInputLargerThanTheCacheFailsAtTheCommitAlone() throws Exception {
    NodeCache c = cache(500);
    String big = input("big.bin", 600);
    String small = input("small.bin", 100);
    try (CacheGroup g = c.download(List.of(big, small), 1 << 20, 1000)) {
      assertThat(g.item(0).data()).as("downloaded, not yet refused").hasSize(600);
      List<CacheGroup.Item> done = g.commit();
      assertThat(done.get(0).error()).isInstanceOf(CacheFullException.class);
      assertThat(done.get(1).entry()).isNotNull();
    }
    assertThat(leftovers()).isEmpty();
    assertThat(c.usedBytes()).isEqualTo(100);
  }
}
