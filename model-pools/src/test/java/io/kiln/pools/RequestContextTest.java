package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.trace.RequestTrace;
import org.junit.jupiter.api.Test;

class RequestContextTest {

  private static final long MS = 1_000_000;

  @Test
  void anUntracedNormalRequestCarriesItsIdAndDeadlineOnly() {
    RequestContext c = RequestContext.of("r1", 5_000 * MS);
    assertThat(c.requestId()).isEqualTo("r1");
    assertThat(c.trace()).isNull();
    assertThat(c.traceId()).isNull();
    assertThat(c.priority()).isEqualTo(RequestContext.Priority.NORMAL);
    assertThat(RequestContext.of(null, 0).requestId()).isEmpty();
  }

  @Test
  void itsDeadlineTravelsAsTheTimeLeft() {
    RequestContext c = RequestContext.of("r", 5_000 * MS);
    assertThat(c.timeoutMs(4_000 * MS)).isEqualTo(1_000);
    assertThat(c.timeoutMs(5_000 * MS - 1)).as("never 0 before the deadline").isEqualTo(1);
    assertThat(c.timeoutMs(5_000 * MS)).isZero();
    assertThat(c.expired(5_000 * MS - 1)).isFalse();
    assertThat(c.expired(5_000 * MS)).isTrue();
    assertThat(c.timeoutMs(6_000 * MS)).isZero();
  }

  @Test
  void aTraceGivesItsIdToARequestWithoutOne() {
    RequestTrace t = new RequestTrace("kiln-7", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", null);
    assertThat(RequestContext.of("", 1, t).requestId()).isEqualTo("kiln-7");
    assertThat(RequestContext.of("client", 1, t).requestId()).isEqualTo("client");
    assertThat(RequestContext.of("", 1).withTrace(t).traceId()).isEqualTo("0af7651916cd43dd8448eb211c80319c");
  }

  @Test
  void withersCopyAndLeaveTheOriginal() {
    RequestContext c = RequestContext.of("r", 1);
    RequestContext low = c.withPriority(RequestContext.Priority.LOW);
    assertThat(low.priority()).isEqualTo(RequestContext.Priority.LOW);
    assertThat(c.priority()).isEqualTo(RequestContext.Priority.NORMAL);
    assertThat(c.withPriority(RequestContext.Priority.NORMAL)).isSameAs(c);
    assertThat(low.deadlineNanos()).isEqualTo(1);
  }
}
