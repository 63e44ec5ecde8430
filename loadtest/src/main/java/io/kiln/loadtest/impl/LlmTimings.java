package io.kiln.loadtest.impl;

/**
 * What one streamed generation took, in {@link System#nanoTime()} terms: when its first non-empty text chunk arrived
 * ({@code firstTokenNs}, meaningful only when {@code chunks > 0}), the gaps between successive text chunks, and its
 * output tokens (the usage chunk's {@code completion_tokens}, else the count of text chunks).
 */
public record LlmTimings(long firstTokenNs, long[] gapsNs, int chunks, long outputTokens) {
}
