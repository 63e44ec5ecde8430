package io.kiln.engines.llm.impl;

import io.kiln.pools.spi.SpecProblem;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * An encoder's engine options ({@code options:} of its spec), immutable; {@link #problems} is pure and never throws
 * (an engine's {@code check}).
 *
 * @param maxLength the most tokens of a text (longer ones are truncated), 0: the tokenizer's limit or 256
 * @param normalize whether embeddings are L2-normalised
 * @param pooling {@value #POOLING_MEAN} (over the attention mask) or {@value #POOLING_CLS} (the first token)
 */
public record EncoderOptions(int maxLength, boolean normalize, String pooling) {

  public static final String MAX_LENGTH = "max_length";
  public static final String NORMALIZE = "normalize";
  public static final String POOLING = "pooling";
  public static final String POOLING_MEAN = "mean";
  public static final String POOLING_CLS = "cls";
  /** The option names, as {@link io.kiln.pools.spi.Engine#optionNames()} lists them. */
  public static final List<String> NAMES = List.of(MAX_LENGTH, NORMALIZE, POOLING);
  private static final Set<String> KNOWN = Set.copyOf(NAMES);

  /** What is wrong with {@code options}, the first first (empty: nothing). Pure. */
  public static List<SpecProblem> problems(Map<String, String> options) {
    List<SpecProblem> problems = new ArrayList<>();
    read(options, problems);
    return problems;
  }

  /** @throws IllegalArgumentException naming the first wrong option (a checked spec has none) */
  public static EncoderOptions of(Map<String, String> options) {
    List<SpecProblem> problems = new ArrayList<>();
    EncoderOptions o = read(options, problems);
    if (!problems.isEmpty()) {
      throw new IllegalArgumentException(problems.get(0).toString());
    }
    return o;
  }

  private static EncoderOptions read(Map<String, String> options, List<SpecProblem> problems) {
    Options o = new Options(options, KNOWN, problems);
    int max = o.integer(MAX_LENGTH, 0, 1, 1 << 20);
    boolean normalize = o.bool(NORMALIZE, true);
    String pooling = o.choice(POOLING, POOLING_MEAN, List.of(POOLING_MEAN, POOLING_CLS));
    return new EncoderOptions(max, normalize, pooling);
  }
}
