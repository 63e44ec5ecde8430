package io.kiln.deploy.logging;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.core.spi.ContextAwareBase;

/**
 * Logback's configuration when it starts (found through {@code META-INF/services}): Kiln's text format, or JSON
 * with {@code KILN_LOG_FORMAT=json}, at {@code KILN_LOG_LEVEL} (info). A node re-configures with its flags and id.
 */
public final class KilnLogConfigurator extends ContextAwareBase implements Configurator {

  @Override
  public ExecutionStatus configure(LoggerContext context) {
    LogFormat format;
    ch.qos.logback.classic.Level level;
    try {
      format = LogFormat.parse(System.getenv(KilnLogging.FORMAT_ENV));
      level = KilnLogging.level(System.getenv(KilnLogging.LEVEL_ENV));
    } catch (IllegalArgumentException e) {
      format = LogFormat.TEXT;
      level = ch.qos.logback.classic.Level.INFO;
    }
    KilnLogging.configure(context, format, level, null);
    return ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY;
  }
}
