package io.kiln.pools;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A stateful model's sequences (Triton's sequence extension with implicit state): requests carry the parameters
 * {@value #SEQUENCE_ID}, {@value #SEQUENCE_START} and {@value #SEQUENCE_END}; each sequence stays on one worker, which
 * keeps its state between requests: every {@link StateSpec} names an output fed back as the next request's input,
 * initialised at {@code sequence_start} to a constant. Clients send neither the state inputs nor receive the state
 * outputs ({@link ModelSpec#signature()} leaves them out). Immutable; validated on construction
 * ({@link IllegalArgumentException} naming the field). See docs/sequences.md.
 *
 * @param idleTimeout how long a sequence may go without a request before the pool frees it (its next request then
 *     gets 400 "no open sequence")
 * @param maxSequences most sequences open at once in one pool (one node); a start beyond it is refused with 503
 *     and {@code Retry-After}
 * @param state the implicit state tensors, at least one
 */
public record SequenceSpec(Duration idleTimeout, int maxSequences, List<StateSpec> state) {

  public static final String SEQUENCE_ID = "sequence_id";
  public static final String SEQUENCE_START = "sequence_start";
  public static final String SEQUENCE_END = "sequence_end";
  public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(60);
  public static final int DEFAULT_MAX_SEQUENCES = 1024;
  public static final int MAX_MAX_SEQUENCES = 1_000_000;
  /** Longest string {@value #SEQUENCE_ID}: ids are keys of in-memory maps and travel with every request. */
  public static final int MAX_ID_LENGTH = 256;

  public SequenceSpec {
    Objects.requireNonNull(idleTimeout, "idleTimeout");
    SpecRules.require("sequence.idle_timeout_ms", SpecRules.positive(idleTimeout));
    SpecRules.require("sequence.max_sequences", SpecRules.atLeast(maxSequences, 1));
    SpecRules.require("sequence.max_sequences", SpecRules.atMost(maxSequences, MAX_MAX_SEQUENCES));
    state = List.copyOf(Objects.requireNonNull(state, "state"));
    if (state.isEmpty()) {
      throw new IllegalArgumentException("sequence.state: needs at least one {input, output} pair");
    }
    Set<String> inputs = new HashSet<>();
    Set<String> outputs = new HashSet<>();
    for (StateSpec s : state) {
      if (!inputs.add(s.input())) {
        throw new IllegalArgumentException("sequence.state: input '" + s.input() + "' is named twice");
      }
      if (!outputs.add(s.output())) {
        throw new IllegalArgumentException("sequence.state: output '" + s.output() + "' is named twice");
      }
    }
  }

  /** The state inputs' names. */
  public Set<String> stateInputs() {
    Set<String> out = new HashSet<>();
    state.forEach(s -> out.add(s.input()));
    return out;
  }

  /** The state outputs' names. */
  public Set<String> stateOutputs() {
    Set<String> out = new HashSet<>();
    state.forEach(s -> out.add(s.output()));
    return out;
  }

  /**
   * The problem of this spec against a model's declared tensors, or null: each state input and output must be
   * declared, with the same datatype and shape, of a type {@link StateSpec#TYPES} holds, and the model must keep at
   * least one input the client sends.
   */
  public String problemWith(List<TensorSpec> inputs, List<TensorSpec> outputs) {
    for (int i = 0; i < state.size(); i++) {
      StateSpec s = state.get(i);
      String at = "sequence.state[" + i + "]";
      TensorSpec in = find(inputs, s.input());
      TensorSpec out = find(outputs, s.output());
      if (in == null) {
        return at + ".input: '" + s.input() + "' is not among the model's inputs";
      }
      if (out == null) {
        return at + ".output: '" + s.output() + "' is not among the model's outputs";
      }
      if (in.datatype() != out.datatype() || !java.util.Arrays.equals(in.shape(), out.shape())) {
        return at + ": input '" + in + "' and output '" + out + "' must have the same datatype and shape";
      }
      if (!StateSpec.TYPES.contains(in.datatype())) {
        return at + ".input: '" + s.input() + "' is " + in.datatype() + "; state tensors may be " + StateSpec.TYPES;
      }
    }
    if (inputs.size() <= state.size()) {
      return "sequence.state: every input of the model is state; it needs one the client sends";
    }
    return null;
  }

  private static TensorSpec find(List<TensorSpec> specs, String name) {
    for (TensorSpec t : specs) {
      if (t.name().equals(name)) {
        return t;
      }
    }
    return null;
  }

  /**
   * The sequence a request names, normalised: an integer id as its decimal text, a string id as it is (so
   * {@code 7} and {@code "7"} are one sequence); null when it names none.
   *
   * @throws InferenceException INVALID_INPUT naming {@code parameters.sequence_id} when it is not a positive integer
   *     or a non-empty string of at most {@value #MAX_ID_LENGTH} characters
   */
  public static String idOf(Map<String, Object> parameters) {
    Object v = parameters.get(SEQUENCE_ID);
    if (v == null) {
      return null;
    }
    if (v instanceof Long || v instanceof Integer) {
      long n = ((Number) v).longValue();
      if (n <= 0) { // Triton: 0 means "no sequence"; here a sequence model needs one
        throw InferenceException.invalid("parameters.sequence_id: must be a uint64 above 0 or a string, got " + n);
      }
      return Long.toString(n);
    }
    if (v instanceof java.math.BigInteger n) { // a uint64 past Long.MAX_VALUE (gRPC's uint64_param)
      if (n.signum() <= 0 || n.bitLength() > 64) {
        throw InferenceException.invalid("parameters.sequence_id: must be a uint64 above 0 or a string, got " + n);
      }
      return n.toString();
    }
    if (v instanceof String s) {
      if (s.isEmpty() || s.length() > MAX_ID_LENGTH) {
        throw InferenceException.invalid("parameters.sequence_id: a string id must have 1.." + MAX_ID_LENGTH
            + " characters, got " + s.length());
      }
      return s;
    }
    throw InferenceException.invalid("parameters.sequence_id: must be a uint64 or a string, got " + v);
  }

  /**
   * Whether the request's {@code name} flag ({@value #SEQUENCE_START} or {@value #SEQUENCE_END}) is set; absent is
   * false.
   *
   * @throws InferenceException INVALID_INPUT naming {@code parameters.<name>} when it is not a boolean
   */
  public static boolean flag(Map<String, Object> parameters, String name) {
    Object v = parameters.get(name);
    if (v == null) {
      return false;
    }
    if (v instanceof Boolean b) {
      return b;
    }
    throw InferenceException.invalid("parameters." + name + ": must be true or false, got " + v);
  }

  /**
   * One implicit state tensor: {@code output} of a request becomes {@code input} of the sequence's next one.
   *
   * @param input the model input the state is fed to
   * @param output the model output the next state is read from
   * @param init the value every element starts with at {@code sequence_start} (0: {@code init: zeros})
   */
  public record StateSpec(String input, String output, double init) {

    /** The element types a state may have. */
    public static final Set<DataType> TYPES = java.util.EnumSet.of(DataType.FP32, DataType.FP64, DataType.INT32,
        DataType.INT64);

    public StateSpec {
      if (input == null || input.isBlank()) {
        throw new IllegalArgumentException("sequence.state.input: required");
      }
      if (output == null || output.isBlank()) {
        throw new IllegalArgumentException("sequence.state.output: required");
      }
      if (!Double.isFinite(init)) {
        throw new IllegalArgumentException("sequence.state.init: must be zeros or a finite number, got " + init);
      }
      input = input.trim();
      output = output.trim();
    }
  }
}
