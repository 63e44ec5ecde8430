package io.kiln.deploy.logging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.pools.trace.RequestLog;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;

/** The two log formats as a node writes them, through logback configured the way a node configures it. */
class KilnLoggingTest {

  private final PrintStream stderr = System.err;
  private final ByteArrayOutputStream captured = new ByteArrayOutputStream();
  private final LoggerContext ctx = (LoggerContext) org.slf4j.LoggerFactory.getILoggerFactory();

  @AfterEach
  void restore() {
    System.setErr(stderr);
    KilnLogging.configure(ctx, LogFormat.TEXT, Level.INFO, null); // as the class path configured it
  }

  private List<String> logged(LogFormat format, Level level, String node, java.util.function.Consumer<Logger> body) {
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    KilnLogging.configure(ctx, format, level, node);
    body.accept(ctx.getLogger("io.kiln.pools.impl.PoolDispatcher"));
    return captured.toString(StandardCharsets.UTF_8).lines().toList();
  }

  @Test
  void jsonIsOneObjectPerLineWithTheRequestIdsWhenTheLineConcernsARequest() throws Exception {
    List<String> lines = logged(LogFormat.JSON, Level.INFO, "node-a", log -> {
      log.info("plain \"quoted\"\nsecond line");
      try (RequestLog.Scope s = RequestLog.open("req-1", "4bf92f3577b34da6a3ce929d0e0e4736")) {
        log.warn("worker {} failed", "w-0", new IllegalStateException("boom"));
      }
      log.debug("not at info");
    });

    assertThat(lines).hasSize(2);
    ObjectMapper json = new ObjectMapper();
    JsonNode first = json.readTree(lines.get(0));
    assertThat(first.path("time").asText()).matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z");
    assertThat(first.path("level").asText()).isEqualTo("INFO");
    assertThat(first.path("logger").asText()).isEqualTo("io.kiln.pools.impl.PoolDispatcher");
    assertThat(first.path("thread").asText()).isEqualTo(Thread.currentThread().getName());
    assertThat(first.path("message").asText()).isEqualTo("plain \"quoted\"\nsecond line");
    assertThat(first.path("node").asText()).isEqualTo("node-a");
    assertThat(first.has("request_id")).isFalse();
    JsonNode second = json.readTree(lines.get(1));
    assertThat(second.path("level").asText()).isEqualTo("WARN");
    assertThat(second.path("message").asText()).isEqualTo("worker w-0 failed");
    assertThat(second.path("request_id").asText()).isEqualTo("req-1");
    assertThat(second.path("trace_id").asText()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
    assertThat(second.path("error").asText()).startsWith("java.lang.IllegalStateException: boom");
  }

  @Test
  void textLooksAsBeforeAndAppendsTheIdsOfARequest() {
    List<String> lines = logged(LogFormat.TEXT, Level.DEBUG, null, log -> {
      log.info("hello");
      try (RequestLog.Scope s = RequestLog.open("req-2", null)) {
        log.debug("request {} expired", "req-2");
      }
      ctx.getLogger("com.hazelcast.Foo").info("hidden: Hazelcast speaks at warn");
    });

    assertThat(lines).hasSize(2);
    assertThat(lines.get(0)).matches("\\d\\d:\\d\\d:\\d\\d\\.\\d{3} \\[.+] INFO PoolDispatcher - hello");
    assertThat(lines.get(1)).endsWith("DEBUG PoolDispatcher - request req-2 expired [request_id=req-2]");
  }

  @Test
  void aNodeKeepsItsLinesForKilnLogs() {
    logged(LogFormat.TEXT, Level.INFO, "node-b", log -> {
      for (int i = 0; i < 5; i++) {
        log.info("line {}", i);
      }
    });
    LogLines kept = KilnLogging.lines();
    assertThat(kept).isNotNull();
    assertThat(kept.tail(2).lines()).hasSize(2).last().asString().endsWith("line 4");
  }

  @Test
  void formatsAndLevelsAreCheckedByName() {
    assertThat(LogFormat.parse(null)).isEqualTo(LogFormat.TEXT);
    assertThat(LogFormat.parse(" JSON ")).isEqualTo(LogFormat.JSON);
    assertThatThrownBy(() -> LogFormat.parse("xml")).hasMessageContaining("text or json, got 'xml'");
    assertThat(KilnLogging.level("debug")).isEqualTo(Level.DEBUG);
    assertThatThrownBy(() -> KilnLogging.level("loud")).hasMessageContaining("got 'loud'");
  }
}
