package io.kiln.pools.impl;

import static io.kiln.pools.testing.Requests.request;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.RequestContext;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class RequestQueueTest {

  private final RequestQueue q = new RequestQueue();

  private static final long MS = 1_000_000;

  private static PendingRequest pending(InferenceRequest r) {
    return new PendingRequest(r, BatchKey.of(r), RequestContext.of(r.id(), Long.MAX_VALUE), 0);
  }

  /** {@code id} arriving at {@code atMillis}, at {@code priority}. */
  private static PendingRequest arriving(String id, RequestContext.Priority priority, long atMillis) {
    InferenceRequest r = request(id, 1, 4);
    return new PendingRequest(r, BatchKey.of(r), RequestContext.of(id, Long.MAX_VALUE).withPriority(priority),
        atMillis * MS);
  }

  private void add(String id, RequestContext.Priority priority, long atMillis) {
    q.add(arriving(id, priority, atMillis), atMillis * MS);
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

  @Test
  void normalRequestsGoAheadOfLowOnesThatArrivedShortlyBefore() {
    add("low-1", RequestContext.Priority.LOW, 0);
    add("normal-1", RequestContext.Priority.NORMAL, 10);
    add("low-2", RequestContext.Priority.LOW, 20);
    add("normal-2", RequestContext.Priority.NORMAL, 30);
    assertThat(ids()).containsExactly("normal-1", "normal-2", "low-1", "low-2");
  }

  @Test
  void aLowRequestThatWaitedItsShareKeepsItsPlace() {
    long share = RequestQueue.LOW_YIELD_NANOS / MS;
    add("low-1", RequestContext.Priority.LOW, 0);
    add("low-2", RequestContext.Priority.LOW, share / 2);
    add("normal-1", RequestContext.Priority.NORMAL, share - 1);
    assertThat(ids()).containsExactly("normal-1", "low-1", "low-2");
    add("normal-2", RequestContext.Priority.NORMAL, share); // low-1 has waited its share; low-2 not yet
    assertThat(ids()).containsExactly("normal-1", "low-1", "normal-2", "low-2");
    add("normal-3", RequestContext.Priority.NORMAL, share / 2 + share);
    assertThat(ids()).as("nor does a flood of online work starve low-2").containsExactly("normal-1", "low-1",
        "normal-2", "low-2", "normal-3");
  }

  @Test
  void removingTheFirstYieldingLowRequestKeepsTheOrder() {
    add("low-1", RequestContext.Priority.LOW, 0);
    add("low-2", RequestContext.Priority.LOW, 1);
    q.remove(q.peek()); // low-1 leaves (cancelled, expired, dispatched)
    add("normal-1", RequestContext.Priority.NORMAL, 2);
    assertThat(ids()).containsExactly("normal-1", "low-2");
    q.addFirst(List.of(arriving("requeued", RequestContext.Priority.LOW, 3)));
    add("normal-2", RequestContext.Priority.NORMAL, 4);
    assertThat(ids()).containsExactly("requeued", "normal-1", "normal-2", "low-2");
  }
}
