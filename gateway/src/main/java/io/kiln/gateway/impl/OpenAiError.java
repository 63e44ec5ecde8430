package io.kiln.gateway.impl;

import io.kiln.pools.InferenceException;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;

/**
 * A refusal of the OpenAI API that names the request field at fault ({@code param}) and, where OpenAI's clients
 * look for one, a {@code code}; and the one writer of OpenAI's error body,
 * {@code {"error": {"message", "type", "param", "code"}}}. It is an {@link InferenceException}, so the
 * {@link ErrorMapper} gives it the status of its kind like any other failure, and the exchange records it once.
 */
final class OpenAiError extends InferenceException {

  static final String MODEL_NOT_FOUND = "model_not_found";
  static final String UNSUPPORTED = "unsupported_parameter";
  static final String INVALID_API_KEY = "invalid_api_key";

  private final String param;
  private final String code;

  private OpenAiError(Kind kind, String param, String code, String message) {
    super(kind, message);
    this.param = param;
    this.code = code;
  }

  /** 400: field {@code param} (null: the body as a whole) is malformed; the message says how. */
  static OpenAiError invalid(String param, String message) {
    return new OpenAiError(Kind.INVALID_INPUT, param, null, param == null ? message : param + ": " + message);
  }

  /**
   * 400: field {@code param} asks for what Kiln does not do. A non-default value is refused rather than ignored,
   * so that a client never reads an answer computed without what it asked for.
   */
  static OpenAiError unsupported(String param, String what) {
    return new OpenAiError(Kind.INVALID_INPUT, param, UNSUPPORTED, param + ": " + what + " is not supported by Kiln");
  }

  String param() {
    return param;
  }

  String code() {
    return code;
  }

  /** OpenAI's {@code type} for an HTTP status. */
  static String type(int status) {
    return switch (status) {
      case 400, 404, 405, 413, 417 -> "invalid_request_error";
      case 401 -> "authentication_error";
      case 429 -> "rate_limit_error";
      default -> "server_error";
    };
  }

  /**
   * The {@code code} of a failure without one of its own: {@value #MODEL_NOT_FOUND} for a 404 (an unknown model is
   * the only one the model routes answer), the overload and deadline classes for 503 and 504, else null.
   */
  static String defaultCode(int status) {
    return switch (status) {
      case 404 -> MODEL_NOT_FOUND;
      case 413 -> "request_too_large";
      case 503 -> "service_unavailable";
      case 504 -> "timeout";
      default -> null;
    };
  }

  /** OpenAI's error object for a status; a null {@code param} or {@code code} is written as a JSON null. */
  static JsonObject body(int status, String message, String param, String code) {
    JsonObject error = new JsonObject().put("message", message).put("type", type(status)).put("param", param)
        .put("code", code);
    return new JsonObject().put("error", error);
  }

  static Buffer buffer(int status, String message, String param, String code) {
    return body(status, message, param, code).toBuffer();
  }
}
