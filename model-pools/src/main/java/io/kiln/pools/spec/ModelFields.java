package io.kiln.pools.spec;

import io.kiln.pools.ModelSpec;
import io.kiln.pools.PythonOptions;
import io.kiln.pools.SpecRules;
import java.lang.invoke.MethodType;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The schema of a model spec: every field of {@link ModelSpec}, in the record's order, with its YAML name, kind,
 * default, owner, shared rule and doc. The wire form, serve's YAML reader and JSON writer, {@link ModelSpec.Builder}
 * and the field table of docs/yaml.md follow from these fields. Adding a field to {@link ModelSpec} means declaring
 * its constant here ({@link #ALL} finds it by its component; loading this class fails when a component has no
 * constant or a constant no component) and, when one engine owns it, checking it in that engine's
 * {@link io.kiln.pools.spi.Engine#check}. Rules that relate several fields (an engine and its uri, a format and its
 * architecture) stay in {@link ModelSpec} and {@link SpecRules}.
 *
 * <p>Stateless and thread-safe.
 */
public final class ModelFields {

  public static final ModelField URI = field("uri", "uri", FieldKind.PATH).required()
      .doc("the model's folder or file, `builtin:<name>`, or an `https://`/`s3://` URI downloaded by the node").build();
  public static final ModelField ENGINE = field("engine", "engine", FieldKind.ENUM).required()
      .choices(ModelSpec::engines).defaultText("detected from the folder")
      .doc("an installed engine's name (docs/engines.md); may be left out when the model folder shows it").build();
  public static final ModelField FORMAT = field("format", "format", FieldKind.ENUM).defaultValue(ModelSpec.FORMAT_AUTO)
      .choices(() -> ModelSpec.FORMATS).doc("the model file's format, for engines that take several (PyTorch);"
          + " detected from the files when left out").build();
  public static final ModelField ARCHITECTURE = field("architecture", "architecture", FieldKind.TEXT).defaultValue("")
      .defaultText("none").rule(v -> SpecRules.notBlank((String) v))
      .doc("the block built around `djl-params` weights: `mlp`, `mlp:512,128` or `resnet18`").build();
  public static final ModelField INPUTS = field("inputs", "inputs", FieldKind.TENSORS).required().defaultValue(List.of())
      .defaultText("required, unless the engine gives them").doc("the tensors the model takes, in its order; a first"
          + " dimension of -1 is the batch").build();
  public static final ModelField OUTPUTS = field("outputs", "outputs", FieldKind.TENSORS).required()
      .defaultValue(List.of()).defaultText("required, unless the engine gives them")
      .doc("the tensors the model returns, in its order").build();
  public static final ModelField WARMUP_BATCH_SIZES = field("warmupBatchSizes", "warmup.batch_sizes",
      FieldKind.INT_LIST).defaultValue(ModelSpec.DEFAULT_WARMUP_BATCH_SIZES).defaultText("[1]")
      .range(1, ModelSpec.MAX_WARMUP_BATCH_SIZE).rule(ModelFields::warmupSizes)
      .doc("batch sizes to warm the model with before it serves (`[]`: none); each at most `batching.max_batch_size`")
      .build();
  public static final ModelField INTRA_OP_THREADS = threads("intraOpThreads", "threads.intra_op",
      "threads per operator");
  public static final ModelField INTER_OP_THREADS = threads("interOpThreads", "threads.inter_op",
      "threads across operators");
  public static final ModelField PYTHON = field("python", "python", FieldKind.SECTION).owner(ModelSpec.ENGINE_PYTHON)
      .defaultText("`class: Model`, `interpreter: python3`").doc("how a Python model runs: `class`, `interpreter`,"
          + " `config`, `env`, `startup_timeout_ms`, `request_timeout_ms` (README)").build();
  public static final ModelField ALLOW_CPU_FALLBACK = field("allowCpuFallback", "allow_cpu_fallback", FieldKind.BOOL)
      .defaultValue(false).doc("a worker given a GPU its engine cannot use runs on the CPU (with a warning) instead"
          + " of failing its load").build();
  public static final ModelField STREAMING = field("streaming", "streaming", FieldKind.BOOL).defaultValue(false)
      .doc("the model answers each request with a sequence of chunks (engines that stream)").build();
  public static final ModelField SHA256 = field("sha256", "sha256", FieldKind.TEXT).defaultValue("").defaultText("none")
      .doc("the hex SHA-256 of what a remote `uri` names: required for `https://`, optional for `s3://`").build();
  public static final ModelField OPTIONS = field("options", "options", FieldKind.MAP).defaultValue(Map.of())
      .defaultText("none").doc("the engine's own settings, each a single value; each engine names and judges its"
          + " own (`Engine.optionNames`, `Engine.check`)").build();
  public static final ModelField SEQUENCE = field("sequence", "sequence", FieldKind.SECTION)
      .place(ModelField.Place.DEPLOYMENT).defaultText("none").doc("beside `model:`: a stateful model's sequences and"
          + " implicit state (docs/sequences.md)").build();

  private static final RecordComponent[] COMPONENTS = ModelSpec.class.getRecordComponents();

  /**
   * Every field, in {@link ModelSpec}'s component order: the constants above, each placed by its component's name, so
   * that no list here names them again.
   */
  public static final List<ModelField> ALL = inOrder(declared(),
      Arrays.stream(COMPONENTS).map(RecordComponent::getName).toList());

  private static final Constructor<ModelSpec> CANONICAL = canonical();

  private ModelFields() {
  }

  /** The fields written at {@code place}, in order. */
  public static List<ModelField> at(ModelField.Place place) {
    return ALL.stream().filter(f -> f.place() == place).toList();
  }

  /** The field of a record component (the wire name), if any. */
  public static Optional<ModelField> byComponent(String component) {
    return ALL.stream().filter(f -> f.component().equals(component)).findFirst();
  }

  /** The component's declared type, generics included: what the wire form reads a field as. */
  public static Type javaType(ModelField field) {
    return COMPONENTS[index(field)].getGenericType();
  }

  /**
   * Why {@code value} cannot be the field's: null when it is of the component's type ({@link #javaType}, a primitive
   * as its box) or null (the field's default), else a message without the field name. The items of a list and the
   * keys and values of a map are checked against the type's arguments too.
   */
  public static String typeProblem(ModelField field, Object value) {
    Type type = javaType(field);
    if (value == null) {
      return null;
    }
    Class<?> raw = type instanceof ParameterizedType p ? (Class<?>) p.getRawType() : (Class<?>) type;
    // wrap(): int to Integer, boolean to Boolean; the value arrives boxed
    if (!MethodType.methodType(raw).wrap().returnType().isInstance(value)) {
      return "expected " + typeName(type) + ", got " + value.getClass().getSimpleName();
    }
    Type[] args = type instanceof ParameterizedType p ? p.getActualTypeArguments() : new Type[0];
    if (value instanceof Collection<?> items && args.length == 1) {
      return itemProblem(type, items, args[0]);
    }
    if (value instanceof Map<?, ?> map && args.length == 2) {
      String keys = itemProblem(type, map.keySet(), args[0]);
      return keys != null ? keys : itemProblem(type, map.values(), args[1]);
    }
    return null;
  }

  /** The field's value in {@code spec}. */
  public static Object get(ModelField field, ModelSpec spec) {
    Method accessor = COMPONENTS[index(field)].getAccessor();
    try {
      return accessor.invoke(spec);
    } catch (IllegalAccessException | InvocationTargetException e) {
      throw new IllegalStateException("cannot read " + field.component() + " of a ModelSpec", e);
    }
  }

  /**
   * A spec from field values; a field missing from {@code values} (or null there) takes its default.
   *
   * @throws IllegalArgumentException naming the first field that is missing or wrong, as {@link ModelSpec}'s
   *     constructor does
   */
  public static ModelSpec build(Map<ModelField, Object> values) {
    Object[] args = new Object[ALL.size()];
    for (int i = 0; i < args.length; i++) {
      ModelField f = ALL.get(i);
      Object v = values.get(f);
      args[i] = v != null ? v : f.defaultValue();
    }
    if (args[0] == null) {
      throw new IllegalArgumentException(URI.component() + ": required");
    }
    try {
      return CANONICAL.newInstance(args);
    } catch (InvocationTargetException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException(e.getCause());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot construct a ModelSpec", e);
    }
  }

  /** Every field's value in {@code spec}, in order. */
  public static Map<ModelField, Object> values(ModelSpec spec) {
    Map<ModelField, Object> values = new LinkedHashMap<>();
    ALL.forEach(f -> values.put(f, get(f, spec)));
    return values;
  }

  private static int index(ModelField field) {
    for (int i = 0; i < ALL.size(); i++) {
      if (ALL.get(i) == field) {
        return i;
      }
    }
    throw new IllegalArgumentException("not a field of ModelFields: " + field);
  }

  private static String itemProblem(Type type, Collection<?> items, Type item) {
    if (item instanceof Class<?> c) { // a nested generic type is left to the record's own checks
      for (Object o : items) {
        if (o != null && !c.isInstance(o)) {
          return "expected " + typeName(type) + ", got a " + o.getClass().getSimpleName() + " in it";
        }
      }
    }
    return null;
  }

  /** {@code List<TensorSpec>} for {@code java.util.List<io.kiln.pools.TensorSpec>}. */
  private static String typeName(Type type) {
    return type.getTypeName().replaceAll("\\b[a-z]\\w*\\.", "");
  }

  /** The rule of both thread counts: 0 is the engine's default. */
  public static String threads(Object value) {
    int n = (Integer) value;
    return n >= 0 && n <= ModelSpec.MAX_THREADS ? null
        : "must be in 0.." + ModelSpec.MAX_THREADS + " (0 = engine default), got " + n;
  }

  private static String warmupSizes(Object value) {
    for (Object o : (List<?>) value) {
      int size = (Integer) o;
      if (size < 1 || size > ModelSpec.MAX_WARMUP_BATCH_SIZE) {
        return "each must be in 1.." + ModelSpec.MAX_WARMUP_BATCH_SIZE + ", got " + size;
      }
    }
    return null;
  }

  private static ModelField threads(String component, String yaml, String what) {
    return field(component, yaml, FieldKind.INT).defaultValue(0).range(1, ModelSpec.MAX_THREADS)
        .rule(ModelFields::threads).defaultText("the engine's; 1 when the other is given")
        .doc(what + " (`threads:` given, a count left out is 1)").build();
  }

  /** The {@code ModelField} constants of this class, declared above {@link #ALL}. */
  private static List<ModelField> declared() {
    List<ModelField> fields = new ArrayList<>();
    for (Field constant : ModelFields.class.getDeclaredFields()) {
      if (constant.getType() != ModelField.class || !Modifier.isStatic(constant.getModifiers())) {
        continue;
      }
      try {
        // Read while this class initialises: a constant declared below ALL is still null here.
        fields.add(Objects.requireNonNull((ModelField) constant.get(null),
            () -> "ModelFields." + constant.getName() + " must be declared above ALL"));
      } catch (IllegalAccessException e) {
        throw new IllegalStateException(e);
      }
    }
    return fields;
  }

  /**
   * {@code declared} in the order of {@code components}: one field per component, each field a component's.
   *
   * @throws IllegalStateException naming the component without a field, or the field without a component
   */
  static List<ModelField> inOrder(List<ModelField> declared, List<String> components) {
    Map<String, ModelField> byComponent = new LinkedHashMap<>();
    for (ModelField f : declared) {
      if (byComponent.put(f.component(), f) != null) {
        throw new IllegalStateException("ModelFields declares component " + f.component() + " twice");
      }
    }
    List<ModelField> ordered = new ArrayList<>();
    for (String component : components) {
      ModelField f = byComponent.remove(component);
      if (f == null) {
        throw new IllegalStateException("ModelSpec's component " + component + " has no field in ModelFields:"
            + " every component needs one");
      }
      ordered.add(f);
    }
    if (!byComponent.isEmpty()) {
      throw new IllegalStateException("ModelFields declares " + byComponent.keySet() + ", which ModelSpec lacks");
    }
    return List.copyOf(ordered);
  }

  private static Constructor<ModelSpec> canonical() {
    try {
      return ModelSpec.class.getDeclaredConstructor(Arrays.stream(COMPONENTS).map(RecordComponent::getType)
          .toArray(Class<?>[]::new));
    } catch (NoSuchMethodException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Builder field(String component, String yaml, FieldKind kind) {
    return new Builder(component, yaml, kind);
  }

  /** Collects one field's declaration; only this class declares fields. */
  private static final class Builder {
    private final String component;
    private final String yaml;
    private final FieldKind kind;
    private ModelField.Place place = ModelField.Place.MODEL;
    private boolean required;
    private Object defaultValue;
    private String defaultText;
    private String owner = "";
    private long min = Long.MIN_VALUE;
    private long max = Long.MAX_VALUE;
    private Supplier<List<String>> choices;
    private Function<Object, String> rule;
    private String doc = "";

    private Builder(String component, String yaml, FieldKind kind) {
      this.component = component;
      this.yaml = yaml;
      this.kind = kind;
    }

    Builder place(ModelField.Place place) {
      this.place = place;
      return this;
    }

    Builder required() {
      this.required = true;
      return this;
    }

    Builder defaultValue(Object value) {
      this.defaultValue = value;
      return this;
    }

    Builder defaultText(String text) {
      this.defaultText = text;
      return this;
    }

    Builder owner(String engine) {
      this.owner = engine;
      return this;
    }

    Builder range(long min, long max) {
      this.min = min;
      this.max = max;
      return this;
    }

    Builder choices(Supplier<List<String>> choices) {
      this.choices = choices;
      return this;
    }

    Builder rule(Function<Object, String> rule) {
      this.rule = rule;
      return this;
    }

    Builder doc(String doc) {
      this.doc = doc;
      return this;
    }

    ModelField build() {
      String dflt = defaultText != null ? defaultText : required ? "required"
          : defaultValue instanceof List<?> l ? new ArrayList<>(l).toString() : String.valueOf(defaultValue);
      return new ModelField(component, yaml, kind, place, required, defaultValue, dflt, owner, min, max, choices, rule,
          doc);
    }
  }
}
