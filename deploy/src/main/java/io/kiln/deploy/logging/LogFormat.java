package io.kiln.deploy.logging;

import java.util.Locale;

/** How a Kiln process writes its log lines: {@code text} (the default) or {@code json} (one object per line). */
public enum LogFormat {
  TEXT, JSON;

  /** The format named {@code text} or {@code json} (any case); null or blank is {@link #TEXT}. */
  public static LogFormat parse(String name) {
    if (name == null || name.isBlank()) {
      return TEXT;
    }
    return switch (name.strip().toLowerCase(Locale.ROOT)) {
      case "text" -> TEXT;
      case "json" -> JSON;
      default -> throw new IllegalArgumentException("log format must be text or json, got '" + name + "'");
    };
  }
}
