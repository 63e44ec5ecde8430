package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.loadtest.PinnedFolder.Leaf;
import io.kiln.loadtest.PinnedFolder.WarmUp;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How a pinned-scenario folder is read: its rounds, each round's measurements and notes, the warm-up records. */
class PinnedFolderTest {

  private static Path wrk(Path dir, String name) throws Exception {
    Files.createDirectories(dir);
    return Files.writeString(dir.resolve(name + ".wrk.txt"), WrkOutputTest.recorded("bare-json-c16.txt"));
  }

  @Test
  void roundsAreReadInNumericOrderOneLeafPerModelSkippingWarmUpFolders(@TempDir Path dir) throws Exception {
    wrk(dir.resolve("round-10").resolve("mlp"), "mlp-json-c16");
    Files.createDirectories(dir.resolve("round-10").resolve("warm"));
    wrk(dir.resolve("round-2").resolve("identity"), "identity-json-c16");
    wrk(dir.resolve("round-2").resolve("mlp"), "mlp-json-c16");
    wrk(dir.resolve("round-1"), "bare-json-c16");   // no model folders: the round's own files
    Files.createDirectories(dir.resolve("rounds-old")); // not a round-N folder

    PinnedFolder f = PinnedFolder.read(dir);

    assertThat(f.hasRounds()).isTrue();
    assertThat(f.leaves()).extracting(Leaf::label).containsExactly("r1", "r2 identity", "r2 mlp", "r10 mlp");
    assertThat(f.leaves()).extracting(Leaf::round).containsExactly(1, 2, 2, 10);
    assertThat(f.leaves().get(1).runs()).containsOnlyKeys("identity-json-c16");
    assertThat(f.leaves().get(1).runs().get("identity-json-c16").client()).isEqualTo("wrk");
  }

  @Test
  void aFolderFromBeforeRoundsIsOneLeafWhoseLoadsComeFromMetaTxt(@TempDir Path dir) throws Exception {
    wrk(dir, "bare-json-c16");
    Files.writeString(dir.resolve("meta.txt"), "git = abc1234\nloadavg_before_bare-json-c16=1.93\nno equals sign\n");
    Files.writeString(dir.resolve("bare-grpc-h2load-c16.h2load.txt"), H2loadOutputTest.recorded("bare-grpc-c16.txt"));
    wrk(dir, "bare-grpc-h2load-c16"); // h2load's output wins over a stray wrk one

    PinnedFolder f = PinnedFolder.read(dir);

    assertThat(f.hasRounds()).isFalse();
    Leaf single = f.leaves().get(0);
    assertThat(f.leaves()).hasSize(1);
    assertThat(single.label()).isEqualTo("single run");
    assertThat(single.notes()).containsEntry("load.bare-json-c16", "1.93");
    assertThat(single.start("bare-json-c16")).isNaN();
    assertThat(single.runs().get("bare-grpc-h2load-c16").client()).isEqualTo("h2load (mean)");
    assertThat(f.meta("git")).isEqualTo("abc1234");
    assertThat(f.meta("cpus")).isEqualTo("?");
    assertThat(f.meta("cold_duration", "5s")).isEqualTo("5s");
  }

  @Test
  void aWarmUpRecordIsTheRoundsElseTheRuns(@TempDir Path dir) throws Exception {
    Path round = wrk(dir.resolve("round-1").resolve("identity"), "identity-json-c16").getParent();
    Files.writeString(round.resolve("identity-json.warm.txt"), "round 1 1000\nround 2 2000.6\nflat no\n");
    Files.writeString(dir.resolve("bare-json.warm.txt"), "round 1 40000.4\n"); // the bare servers warm once
    PinnedFolder f = PinnedFolder.read(dir);
    Leaf leaf = f.leaves().get(0);

    assertThat(f.warmUp(leaf, "identity-json")).isEqualTo(new WarmUp(List.of(1000.0, 2000.6), true, false));
    assertThat(f.warmUp(leaf, "bare-json")).isEqualTo(new WarmUp(List.of(40000.4), false, false));
    assertThat(f.warmUp(leaf, "mlp-json")).isNull();
  }
}
