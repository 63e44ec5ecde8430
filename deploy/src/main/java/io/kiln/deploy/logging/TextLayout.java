package io.kiln.deploy.logging;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.CoreConstants;
import ch.qos.logback.core.LayoutBase;
import io.kiln.pools.trace.RequestLog;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.Map;

/**
 * Kiln's text log line, as slf4j-simple wrote it before: {@code 15:26:11.123 [thread] INFO Logger - message}, plus
 * {@code [request_id=… trace_id=…]} on the lines about a request, and the stack trace of an exception.
 */
public final class TextLayout extends LayoutBase<ILoggingEvent> {

  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSS").withZone(ZoneId.systemDefault());

  @Override
  public String doLayout(ILoggingEvent e) {
    StringBuilder b = new StringBuilder(128);
    TIME.formatTo(Instant.ofEpochMilli(e.getTimeStamp()), b);
    b.append(" [").append(e.getThreadName()).append("] ").append(e.getLevel()).append(' ')
        .append(shortName(e.getLoggerName())).append(" - ").append(e.getFormattedMessage());
    Map<String, String> mdc = e.getMDCPropertyMap();
    String id = mdc.get(RequestLog.REQUEST_ID);
    String trace = mdc.get(RequestLog.TRACE_ID);
    if (id != null || trace != null) {
      b.append(" [");
      if (id != null) {
        b.append("request_id=").append(id);
      }
      if (trace != null) {
        b.append(id != null ? " " : "").append("trace_id=").append(trace);
      }
      b.append(']');
    }
    b.append(CoreConstants.LINE_SEPARATOR);
    if (e.getThrowableProxy() != null) {
      b.append(ThrowableProxyUtil.asString(e.getThrowableProxy())).append(CoreConstants.LINE_SEPARATOR);
    }
    return b.toString();
  }

  static String shortName(String logger) {
    int dot = logger.lastIndexOf('.');
    return dot < 0 ? logger : logger.substring(dot + 1);
  }
}
