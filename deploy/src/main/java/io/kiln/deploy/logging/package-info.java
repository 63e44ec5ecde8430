/**
 * The process's logging: logback configured in code ({@link io.kiln.deploy.logging.KilnLogging}), text as before or
 * JSON lines ({@code --log-format}, {@code KILN_LOG_FORMAT}), and the node's last lines kept for {@code kiln logs}
 * ({@link io.kiln.deploy.logging.LogLines}).
 */
package io.kiln.deploy.logging;
