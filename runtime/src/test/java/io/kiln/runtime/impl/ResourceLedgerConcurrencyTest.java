package io.kiln.runtime.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.Allocation;
import io.kiln.runtime.Allocation.GpuShare;
import io.kiln.runtime.Resources;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Many threads reserve and release on one ledger. The test keeps its own count of what every thread
 * holds: added after a reservation returns, removed before it is released, so it never exceeds what
 * the ledger has reserved. If that count ever exceeds a device or the CPU total, the ledger handed the
 * same capacity out twice.
 */
class ResourceLedgerConcurrencyTest {

  private static final int GPUS = 4;
  private static final long CPU_UNITS = 16 * Resources.SCALE;
  private static final Resources NODE = Resources.cpu(16).withGpu(GPUS);
  private static final List<Resources> REQUESTS = List.of(
      Resources.gpu(1), Resources.gpu(2), Resources.gpu(1).withCpu(2), Resources.gpu(0.5), Resources.gpu(0.25),
      Resources.gpu(0.1).withCpu(1), Resources.gpu(0.3), Resources.cpu(3), Resources.cpu(0.5), Resources.NONE);

  private final ExecutorService pool = Executors.newFixedThreadPool(8);

  @AfterEach
  void stop() {
    pool.shutdownNow();
  }

  @Test
  void neverOverAssignsADeviceOrGoesNegative() throws Exception {
    ResourceLedger ledger = new ResourceLedger(NODE);
    AtomicLongArray heldGpuUnits = new AtomicLongArray(GPUS);
    AtomicLong heldCpuUnits = new AtomicLong();
    ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
    AtomicInteger granted = new AtomicInteger();
    AtomicInteger refused = new AtomicInteger();
    CountDownLatch start = new CountDownLatch(1);

    List<Future<?>> workers = new ArrayList<>();
    for (int t = 0; t < 8; t++) {
      long seed = t;
      workers.add(pool.submit(() -> {
        Random random = new Random(seed);
        List<Allocation> mine = new ArrayList<>();
        start.await();
        for (int i = 0; i < 5_000; i++) {
          if (!mine.isEmpty() && (mine.size() >= 3 || random.nextBoolean())) {
            Allocation a = mine.remove(random.nextInt(mine.size()));
            account(a, -1, heldGpuUnits, heldCpuUnits);
            if (!ledger.release(a)) {
              violations.add("first release of " + a + " returned false");
            }
            if (random.nextInt(10) == 0 && ledger.release(a)) {
              violations.add("second release of " + a + " returned true");
            }
            continue;
          }
          Optional<Allocation> got = ledger.tryReserve(REQUESTS.get(random.nextInt(REQUESTS.size())));
          if (got.isEmpty()) {
            refused.incrementAndGet();
            continue;
          }
          granted.incrementAndGet();
          Allocation a = got.get();
          mine.add(a);
          if (a.gpuIndices().stream().distinct().count() != a.gpus().size()) {
            violations.add("repeated device in " + a);
          }
          account(a, +1, heldGpuUnits, heldCpuUnits);
          for (int d = 0; d < GPUS; d++) {
            if (heldGpuUnits.get(d) > Resources.SCALE) {
              violations.add("device " + d + " over-assigned: " + heldGpuUnits.get(d) + " units");
            }
          }
          if (heldCpuUnits.get() > CPU_UNITS) {
            violations.add("CPU over-assigned: " + heldCpuUnits.get() + " units");
          }
          Resources available = ledger.available();
          if (!available.fitsIn(NODE)) {
            violations.add("available " + available + " exceeds total");
          }
        }
        for (Allocation a : mine) {
          account(a, -1, heldGpuUnits, heldCpuUnits);
          ledger.release(a);
        }
        return null;
      }));
    }
    start.countDown();
    for (Future<?> w : workers) {
      w.get(60, TimeUnit.SECONDS);
    }

    assertThat(violations).isEmpty();
    assertThat(granted.get()).isGreaterThan(1_000);
    assertThat(refused.get()).as("the node must have been contended").isGreaterThan(0);
    assertThat(ledger.available()).isEqualTo(NODE);
    for (int d = 0; d < GPUS; d++) {
      assertThat(heldGpuUnits.get(d)).isZero();
    }
  }

  @Test
  void racingReleasesOfOneAllocationSucceedOnce() throws Exception {
    ResourceLedger ledger = new ResourceLedger(NODE);
    for (int round = 0; round < 200; round++) {
      Allocation a = ledger.tryReserve(Resources.gpu(1).withCpu(1)).orElseThrow();
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Boolean>> racers = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        racers.add(pool.submit(() -> {
          start.await();
          return ledger.release(a);
        }));
      }
      start.countDown();
      int successes = 0;
      for (Future<Boolean> r : racers) {
        successes += r.get(30, TimeUnit.SECONDS) ? 1 : 0;
      }
      assertThat(successes).as("round %d", round).isEqualTo(1);
      assertThat(ledger.available()).isEqualTo(NODE);
    }
  }

  private static void account(Allocation a, int sign, AtomicLongArray gpuUnits, AtomicLong cpuUnits) {
    for (GpuShare s : a.gpus()) {
      gpuUnits.addAndGet(s.index(), sign * Math.round(s.fraction() * Resources.SCALE));
    }
    cpuUnits.addAndGet(sign * a.resources().unitsOf(Resources.CPU));
  }
}
