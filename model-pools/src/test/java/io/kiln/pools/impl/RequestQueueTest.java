package io.kiln.pools.impl;

import static io.kiln.pools.testing.Requests.request;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.InferenceRequest;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class RequestQueueTest {

  private final RequestQueue q = new RequestQueue();

  private static PendingRequest pending(InferenceRequest r) {
    return new PendingRequest(r, BatchKey.of(r), Long.MAX_VALUE, 0);
  }

  private List<String> ids() {
    List<String> ids = new ArrayList<>();
    for (PendingRequest p = q.peek(); p != null; p = p.next) {
      ids.add(p.request.id());
    }
    return ids;
  }

  @Test
  void keepsOrderAndRowTotalsPerShape() {
    PendingRequest a = pending(request("a", 2, 4));
    PendingRequest b = pending(request("b", 3, 8));
    PendingRequest c = pending(request("c", 5, 4));
    q.addLast(a);
    q.addLast(b);
    q.addLast(c);
    assertThat(ids()).containsExactly("a", "b", "c");
    assertThat(q.rowsFor(a.key)).isEqualTo(7);
    assertThat(q.countFor(a.key)).isEqualTo(2);
    assertThat(q.rowsFor(b.key)).isEqualTo(3);

    q.remove(b);
    q.remove(b);
    assertThat(ids()).containsExactly("a", "c");
    assertThat(q.rowsFor(b.key)).isZero();
    q.addFirst(List.of(b, pending(request("d", 1, 8))));
    assertThat(ids()).containsExactly("b", "d", "a", "c");
    assertThat(q.size()).isEqualTo(4);
    q.remove(c);
    q.remove(q.peek());
    assertThat(ids()).containsExactly("d", "a");
    assertThat(q.rowsFor(a.key)).isEqualTo(2);
  }

  @Test
  void zeroRowRequestsKeepTheirShapeCounted() {
    PendingRequest empty = pending(request("e", 0, 4));
    q.addLast(empty);
    assertThat(q.countFor(empty.key)).isEqualTo(1);
    assertThat(q.rowsFor(empty.key)).isZero();
    q.remove(empty);
    assertThat(q.countFor(empty.key)).isZero();
    assertThat(q.isEmpty()).isTrue();
  }

  @Test
  void batchKeysCompareShapesNotBatchSizes() {
    assertThat(BatchKey.of(request("a", 1, 4))).isEqualTo(BatchKey.of(request("b", 7, 4)))
        .hasSameHashCodeAs(BatchKey.of(request("b", 7, 4)))
        .isNotEqualTo(BatchKey.of(request("c", 1, 5)));
    assertThat(BatchKey.of(request("a", 1, 4))).hasToString("[x:FP32[-1, 4]]->[]");
  }
}
