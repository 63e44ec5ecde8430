package io.kiln.deploy.logging;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import ch.qos.logback.core.Layout;

/** Keeps what the process logs, formatted as it is written, in {@link LogLines}. */
final class LinesAppender extends AppenderBase<ILoggingEvent> {

  private final LogLines lines;
  private final Layout<ILoggingEvent> layout;

  LinesAppender(LogLines lines, Layout<ILoggingEvent> layout) {
    this.lines = lines;
    this.layout = layout;
  }

  @Override
  protected void append(ILoggingEvent e) {
    lines.addAll(layout.doLayout(e));
  }
}
