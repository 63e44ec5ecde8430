package io.kiln.deploy.logging;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.Layout;
import ch.qos.logback.core.encoder.LayoutWrappingEncoder;
import java.util.Map;
import org.slf4j.LoggerFactory;

/**
 * Configures the process's logging (logback, set up in code: no logback.xml): one console appender on stderr in
 * the chosen {@link LogFormat}, and on a node the {@link LogLines} that {@code kiln logs} reads. Levels: {@code info}
 * by default (Kiln's own loggers at the level asked for, {@code --log-level}); Hazelcast and Vert.x at {@code warn};
 * DJL's CUDA probe at {@code error} (a CPU node is normal). Environment: {@code KILN_LOG_FORMAT}, {@code
 * KILN_LOG_LEVEL} (read at class-path start by {@link KilnLogConfigurator}; the flags override them).
 */
public final class KilnLogging {

  public static final String FORMAT_ENV = "KILN_LOG_FORMAT";
  public static final String LEVEL_ENV = "KILN_LOG_LEVEL";

  private static final Map<String, Level> QUIET = Map.of("com.hazelcast", Level.WARN, "io.vertx", Level.WARN,
      "io.netty", Level.WARN, "ai.djl.util.cuda.CudaUtils", Level.ERROR, "io.opentelemetry", Level.WARN);

  private static volatile LogLines lines;

  private KilnLogging() {
  }

  /** The level named {@code trace|debug|info|warn|error} (any case); null or blank is info. */
  public static Level level(String name) {
    if (name == null || name.isBlank()) {
      return Level.INFO;
    }
    Level l = Level.toLevel(name.strip(), null);
    if (l == null || l == Level.ALL || l == Level.OFF) {
      throw new IllegalArgumentException("log level must be trace, debug, info, warn or error, got '" + name + "'");
    }
    return l;
  }

  /**
   * Re-configures logging: {@code format} on stderr, Kiln's loggers ({@code io.kiln}) at {@code kilnLevel}; with a
   * {@code node}, every JSON line names it and the process keeps its last lines ({@link #lines()}). Safe to call
   * again (each call replaces what the previous set up).
   */
  public static synchronized void configure(LogFormat format, Level kilnLevel, String node) {
    // Hazelcast's members log through SLF4J (their config says so), but its class-path checks run before any config
    // is read and would write java.util.logging lines, in neither format.
    if (System.getProperty("hazelcast.logging.type") == null) {
      System.setProperty("hazelcast.logging.type", "slf4j");
    }
    LoggerContext ctx = (LoggerContext) LoggerFactory.getILoggerFactory();
    configure(ctx, format, kilnLevel, node);
  }

  static void configure(LoggerContext ctx, LogFormat format, Level kilnLevel, String node) {
    ctx.reset();
    Layout<ILoggingEvent> layout = layout(ctx, format, node);
    LayoutWrappingEncoder<ILoggingEvent> encoder = new LayoutWrappingEncoder<>();
    encoder.setContext(ctx);
    encoder.setLayout(layout);
    encoder.start();
    ConsoleAppender<ILoggingEvent> console = new ConsoleAppender<>();
    console.setContext(ctx);
    console.setName("stderr");
    console.setTarget("System.err");
    console.setEncoder(encoder);
    console.start();
    Logger root = ctx.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    root.setLevel(Level.INFO);
    root.addAppender(console);
    if (node != null) {
      LogLines kept = lines != null ? lines : new LogLines();
      LinesAppender buffer = new LinesAppender(kept, layout(ctx, format, node));
      buffer.setContext(ctx);
      buffer.setName("lines");
      buffer.start();
      root.addAppender(buffer);
      lines = kept;
    }
    QUIET.forEach((name, level) -> ctx.getLogger(name).setLevel(level));
    ctx.getLogger("io.kiln").setLevel(kilnLevel);
  }

  private static Layout<ILoggingEvent> layout(LoggerContext ctx, LogFormat format, String node) {
    if (format == LogFormat.JSON) {
      JsonLayout json = new JsonLayout();
      json.setContext(ctx);
      json.setNode(node);
      json.start();
      return json;
    }
    TextLayout text = new TextLayout();
    text.setContext(ctx);
    text.start();
    return text;
  }

  /** The lines this node logged since it was configured with a node id, or null in a process that is no node. */
  public static LogLines lines() {
    return lines;
  }
}
