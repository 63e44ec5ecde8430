package io.kiln.loadtest;

import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import java.util.Objects;

/**
 * Judges an HTTP answer by more than its status: its body and headers. Without a check a run counts an answer by
 * status alone ({@code http:200}) and discards its body unread; with one, every body is read and the check's
 * {@link Verdict} is what the run counts (its key in {@link RunResult#outcomes()}, its latency in
 * {@link RunResult#latencyByOutcome()}, its example in {@link RunResult#examples()}). Called on the generator's
 * event loops, from several at once: it must be quick and must not block. Requests that got no answer (a timeout, a
 * connection error) never reach it; they count as {@code timeout} and {@code connection_error}.
 */
@FunctionalInterface
public interface ResponseCheck {

  Verdict check(long index, int status, MultiMap headers, Buffer body);

  /**
   * How one answer counts.
   *
   * @param key     the outcome it is counted under; few distinct keys per run (they are kept apart, each with its
   *                latency)
   * @param ok      whether it is a success
   * @param example why, when it is worth saying (a failure's reason); null for none. Distinct examples are counted
   *                per key, the first {@value RunResult#MAX_EXAMPLES} kept and the rest under {@code (other)}, so
   *                an example should name a kind of answer, not one answer
   */
  record Verdict(String key, boolean ok, String example) {

    public Verdict {
      Objects.requireNonNull(key, "key");
    }

    public static Verdict ok(String key) {
      return new Verdict(key, true, null);
    }

    public static Verdict failed(String key, String example) {
      return new Verdict(key, false, example);
    }
  }
}
