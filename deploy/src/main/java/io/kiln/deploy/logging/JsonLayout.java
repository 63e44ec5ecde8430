package io.kiln.deploy.logging;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.LayoutBase;
import com.fasterxml.jackson.core.io.JsonStringEncoder;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Map;

/**
 * One JSON object per log line: {@code time} (ISO-8601 UTC, milliseconds), {@code level}, {@code logger},
 * {@code thread}, {@code message}, {@code node} (once the process knows its node id), then every MDC entry, among them
 * {@code request_id} and {@code trace_id} on the lines about a request, and {@code error} (the stack trace) when the
 * line carries an exception. Field order is fixed; the line ends with {@code \n}.
 */
public final class JsonLayout extends LayoutBase<ILoggingEvent> {

  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")
      .withZone(ZoneOffset.UTC);

  private volatile String node;

  /** The node id every line names from now on (null: none). */
  public void setNode(String node) {
    this.node = node;
  }

  @Override
  public String doLayout(ILoggingEvent e) {
    StringBuilder b = new StringBuilder(256);
    b.append("{\"time\":\"");
    TIME.formatTo(Instant.ofEpochMilli(e.getTimeStamp()), b);
    b.append('"');
    field(b, "level", e.getLevel().toString());
    field(b, "logger", e.getLoggerName());
    field(b, "thread", e.getThreadName());
    field(b, "message", e.getFormattedMessage());
    String n = node;
    if (n != null) {
      field(b, "node", n);
    }
    for (Map.Entry<String, String> m : e.getMDCPropertyMap().entrySet()) {
      field(b, m.getKey(), m.getValue());
    }
    if (e.getThrowableProxy() != null) {
      field(b, "error", ThrowableProxyUtil.asString(e.getThrowableProxy()));
    }
    return b.append("}\n").toString();
  }

  private static void field(StringBuilder b, String key, String value) {
    b.append(",\"");
    JsonStringEncoder.getInstance().quoteAsString(key, b);
    b.append("\":\"");
    JsonStringEncoder.getInstance().quoteAsString(value == null ? "" : value, b);
    b.append('"');
  }
}
