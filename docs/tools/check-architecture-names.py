#!/usr/bin/env python3
"""Checks that every name ARCHITECTURE.md puts in backticks exists in the repository today.

Usage: python3 docs/tools/check-architecture-names.py [FILE.md]   (default: ARCHITECTURE.md at the repository root)
       python3 docs/tools/check-architecture-names.py --self-test  (wrong names of every kind are refused, real ones pass)

Each inline `code span` is read as one or more names, and each name is checked by its kind:
  - a path (`loadtest/run.sh`, `deploy/k8s`, `models/*/fetch.sh`): a tracked file or folder (globs allowed);
  - a Java name (`PoolManager`, `FrontExchange.OFFLOAD_BYTES`, `io.kiln.runtime.time.Deadlines`,
    `pools.spi.Engine`, `Engine.optionNames`): a type declared in the Java sources (package suffix checked when given),
    and each member after it a word of that type's source file;
  - a package (`io.kiln.runtime.gpu`, `pipelines.graphs`): a source folder ending in those segments;
  - a command-line flag (`--warmup-seconds`): the string "--warmup-seconds" in a source or script;
  - anything else (meters, stores, event-bus addresses, YAML fields, HTTP paths and headers, environment
    variables): its literal text, or its Micrometer spelling for a Prometheus name, in a file that is not Markdown.
Names of the JDK and of third-party libraries are in ALLOWED below; placeholders (`<node>`, `{m}`, `…`) are wildcards.
Fenced code blocks are read only for command-line flags and KILN_* variables (the command synopsis); their
diagrams and the YAML example are not checked.

Prints each name it cannot find with its line, and exits 1 when there is one; 0 and a count otherwise. The file set
is `git ls-files` plus untracked files git does not ignore (a walk of the tree when git is not there), less Markdown
and this folder (its canary names must not find themselves). Stdlib only.
"""
import fnmatch
import os
import re
import subprocess
import sys

# JDK, Vert.x, Hazelcast, Netty, Jackson, Micrometer, ONNX Runtime, DJL, W3C/HTTP and OpenAI names the document uses.
ALLOWED = {
    "CompletionStage", "ServiceLoader", "java.lang.Error", "Error", "AutoCloseable", "SerializedLambda",
    "Future", "Duration", "NettyUtils", "LongSupplier", "Clock", "ThreadingModel.WORKER", "EventBusOptions",
    "ClientAuth.REQUIRED", "updateSSLOptions", "FlushConsolidationHandler", "putIfAbsent", "get_if_exists",
    "numpy.frombuffer", "histogram_quantile", "sum by (le, …)", "nvidia-smi", "Schubfach",
    "io.vertx:vertx-stack-depchain:5.0.7", "io.micrometer:micrometer-bom:1.17.2", "ai.djl:api",
    "ai.djl.pytorch:pytorch-engine", "pytorch-jni:2.7.1-0.36.0", "pytorch-native-cpu:2.7.1:linux-x86_64",
    "pytorch-native-cu124:2.5.1", "com.microsoft.onnxruntime:onnxruntime", "com.hazelcast:hazelcast",
    "opentelemetry-sdk", "opentelemetry-exporter-otlp", "opentelemetry-exporter-sender-jdk", "bcpkix",
    "onnxruntime-engine", "pytorch-native-cpu", "__vertx.*", "/proc/net/tcp",
}

EXCLUDED_DIRS = {".git", "target", "node_modules", ".kiln", ".mvn"}
TEXT_SUFFIXES = (".java", ".py", ".sh", ".yaml", ".yml", ".xml", ".proto", ".js", ".mjs", ".html", ".css",
                 ".properties", ".json", ".txt", ".lua", ".cmd", ".toml", ".cfg", ".conf")
MAX_TEXT_BYTES = 2 * 1024 * 1024


def repo_root():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", ".."))


def list_files(root):
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=root,
                             check=True, capture_output=True).stdout.decode("utf-8", "replace")
        files = [f for f in out.split("\0") if f]
        if files:
            return sorted(f for f in set(files) if os.path.exists(os.path.join(root, f)))
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in EXCLUDED_DIRS]
        for name in filenames:
            files.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
    return sorted(files)


class Repo:
    """The repository as the checks see it: its files and folders, its Java types and packages, and the text of
    its sources, scripts and resources (Markdown left out, so that no document vouches for another)."""

    def __init__(self, root):
        self.root = root
        self.files = list_files(root)
        self.file_set = set(self.files)
        self.dirs = set()
        for f in self.files:
            parts = f.split("/")
            for i in range(1, len(parts)):
                self.dirs.add("/".join(parts[:i]))
        self.types = {}      # simple name -> [(package, file)]
        self.packages = set()
        texts = []
        type_decl = re.compile(r"\b(?:class|interface|record|enum|@interface)\s+([A-Z][\w$]*)")
        pkg_decl = re.compile(r"^\s*package\s+([\w.]+)\s*;", re.M)
        self.sources = {}
        for f in self.files:
            base = os.path.basename(f)
            text_file = base.endswith(TEXT_SUFFIXES) or "." not in base or "/services/" in f
            if f.startswith("docs/tools/") or base.endswith(".md") or not text_file:
                continue
            path = os.path.join(root, f)
            try:
                if os.path.getsize(path) > MAX_TEXT_BYTES:
                    continue
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            texts.append(text)
            if base.endswith(".java"):
                self.sources[f] = text
                m = pkg_decl.search(text)
                pkg = m.group(1) if m else ""
                self.packages.add(pkg)
                for t in type_decl.findall(text):
                    self.types.setdefault(t, []).append((pkg, f))
        self.text = "\n".join(texts)
        self.text_lower = self.text.lower()

    def has_path(self, p):
        p = p.rstrip("/")
        if any(ch in p for ch in "*?["):
            return any(fnmatch.fnmatch(f, p) for f in self.files) or any(fnmatch.fnmatch(d, p) for d in self.dirs)
        # A path inside a module (META-INF/services/...) may be named without the module's folders.
        return p in self.dirs or p in self.file_set or any(f.endswith("/" + p) for f in self.files) \
            or any(d.endswith("/" + p) for d in self.dirs)

    def has_package(self, segments):
        suffix = ".".join(segments)
        return any(pkg == suffix or pkg.endswith("." + suffix) for pkg in self.packages)

    def find_type(self, qualifier, name):
        hits = self.types.get(name, [])
        if qualifier:
            q = ".".join(qualifier)
            hits = [(p, f) for p, f in hits
                    if p == q or p.endswith("." + q) or (p + "." + os.path.basename(f)[:-5]).endswith(q)]
        return hits


JAVA_NAME = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*$")
CALL = re.compile(r"^([A-Za-z_$][\w$.]*)\((.*)\)$")


def check_java(repo, name):
    """A dotted Java name: package segments, then a type, then members (methods, fields, nested types)."""
    parts = name.split(".")
    idx = next((i for i, p in enumerate(parts) if p[:1].isupper()), None)
    if idx is None or not any(c.islower() for c in parts[idx]):
        return None  # no type in it (a package, a store), or a constant: checked as a literal
    if len(parts) == 1 and parts[0] not in repo.types:
        # A lone word that is no type: an engine's, a gRPC method's or a protocol's name, as a literal.
        if re.search(r'"' + re.escape(name) + r'"', repo.text) or re.search(
                r"\brpc\s+" + re.escape(name) + r"\b", repo.text):
            return ""
    # Nested types: take the longest run of capitalised segments that are all declared types.
    hits = repo.find_type(parts[:idx], parts[idx])
    if not hits and len(parts) == 2 and re.search(r"\bpackage\s+" + re.escape(parts[0]) + r"\s*;", repo.text) \
            and re.search(r"\bservice\s+" + re.escape(parts[1]) + r"\b", repo.text):
        return ""  # a gRPC service of a .proto file: package.Service
    if not hits:
        return "no type %s%s in the Java sources" % (".".join(parts[:idx]) + "." if idx else "", parts[idx])
    files = [f for _, f in hits]
    for member in parts[idx + 1:]:
        pattern = re.compile(r"(?<![\w$])" + re.escape(member) + r"(?![\w$])")
        if not any(pattern.search(repo.sources[f]) for f in files):
            return "%s has no member %s" % (parts[idx], member)
        nested = repo.types.get(member)
        if nested and member[:1].isupper():
            files = [f for _, f in nested] + files
    return ""


PROM_SUFFIXES = ("_seconds", "_total", "_bytes", "_ratio", "_rows", "_count", "_sum", "_bucket")


def expand_braces(s):
    """kiln.pool.{a,b} names two meters; kiln_x_total{model,code} is one meter with its labels."""
    s = re.sub(r"(?<=[a-z0-9])\{[^{}]*\}$", "", s)
    m = re.search(r"(?<=[._])\{([^{}]*,[^{}]*)\}", s)
    if not m:
        return [s]
    out = []
    for alt in m.group(1).split(","):
        out.extend(expand_braces(s[:m.start()] + alt.strip() + s[m.end():]))
    return out


def literal_prefix(s):
    """The text before the first placeholder: <node>, {m}, *, …, [optional part]."""
    cut = len(s)
    for mark in ("<", "{", "*", "…", "[", "..."):
        i = s.find(mark)
        if i >= 0:
            cut = min(cut, i)
    return s[:cut]


def check_meter(repo, name):
    for n in expand_braces(name):
        stem = literal_prefix(n)
        candidates = {stem, stem.replace("_", ".")}
        base = stem
        for suf in PROM_SUFFIXES:
            if base.endswith(suf):
                base = base[: -len(suf)]
                candidates.add(base)
                candidates.add(base.replace("_", "."))
        whole = stem == n  # no placeholder: the meter's whole name, not a prefix of another
        if not any(c and literal_in(repo, c, whole_tail=whole) for c in candidates):
            return "meter %s found neither as written nor as %s" % (n, base.replace("_", "."))
    return ""


def literal_in(repo, text, whole_tail=True):
    """The text as a whole word where it starts or ends with a word character (`SSE` is not found in "class");
    whole_tail False for the part of a name before a placeholder (`KILN_CLUSTER_TLS_*`)."""
    corpus = repo.text
    check_head = bool(re.match(r"[\w$]", text))
    check_tail = whole_tail and bool(re.search(r"[\w$]$", text))
    i = corpus.find(text)
    while i >= 0:  # str.find, not a regular expression over the whole corpus per name: the check stays fast
        before = corpus[i - 1] if i > 0 else " "
        j = i + len(text)
        after = corpus[j] if j < len(corpus) else " "
        if not (check_head and (before.isalnum() or before in "_$")) \
                and not (check_tail and (after.isalnum() or after in "_$")):
            return True
        i = corpus.find(text, i + 1)
    return False


def check_one(repo, name):
    name = name.strip()
    if not name or name in ALLOWED:
        return ""
    if " → " in name:
        return ""  # a description of a record's shape, not a name
    m = re.match(r"^(?:GET|POST|PUT|DELETE|HEAD)(?:\|(?:GET|POST|PUT|DELETE))* (/\S*)$", name)
    if m:  # an HTTP route: its path up to the first placeholder or query
        path = re.split(r"[\[{?<]", m.group(1))[0].rstrip("/")
        return "" if path in repo.text else "route %s in no source" % path
    if name.startswith("kiln ") or name.startswith("./kiln "):
        flags = re.findall(r"--[\w-]+", name)
        missing = [f for f in flags if check_one(repo, f)]
        return "flags %s in no source" % ", ".join(missing) if missing else ""
    m = re.match(r"^(?:python3|bash|sh) (\S+)(?: .*)?$", name)
    if m:  # a command running a script of the repository
        return check_one(repo, m.group(1))
    if name.startswith(("...", "…")):  # the tail of a route named just before: `.../unload`
        tail = name.lstrip(".…")
        return "" if tail in repo.text else "%s in no source" % tail
    if name.startswith('{"'):  # a JSON shape: its keys
        keys = re.findall(r'"(\w+)"\s*[:}]', name)
        missing = [k for k in keys if ('"' + k + '"') not in repo.text]
        return "keys %s in no source" % missing if missing or not keys else ""
    if name.startswith("./"):
        name = name[2:]
    # A path of the repository.
    if "/" in name and not name.startswith(("/", "kiln/")) and not re.search(r"\s", name) \
            and re.match(r"^[\w.*?-]+(/[\w.*?<>-]*)+$", name):
        if repo.has_path(name):
            return ""
        if name.startswith("deploy/target/") or name.startswith(".kiln/"):
            # Written at run time: the literal must be where the code writes it.
            stem = name.split("/", 1)[1] if name.startswith("deploy/target/") else name
            return "" if stem in repo.text else "no code writes %s" % name
        return "no tracked file or folder %s" % name
    if name.startswith("--"):
        flag = re.split(r"[\s=\[]", name)[0]
        return "" if ('"' + flag) in repo.text or (flag + '"') in repo.text or (flag + " ") in repo.text \
            else "flag %s in no source" % flag
    if re.match(r"^kiln[_.][\w.{},*<>-]+$", name):
        return check_meter(repo, name)
    m = CALL.match(name)
    if m and JAVA_NAME.match(m.group(1)):
        r = check_java(repo, m.group(1))
        if r is not None:
            return r
    if JAVA_NAME.match(name):
        r = check_java(repo, name)
        if r is not None:
            return r
        segments = name.split(".")
        if len(segments) > 1 and repo.has_package(segments):
            return ""
    if re.match(r"^\.?[\w-]+\.\w+$", name) and any(f.endswith("/" + name) or f == name or f.endswith(name)
                                                       for f in repo.files):
        return ""  # a file name (model.onnx, .pt)
    if literal_in(repo, name):
        return ""
    stem = literal_prefix(name)
    if stem and literal_in(repo, stem, whole_tail=(stem == name)):
        return ""
    if name.startswith("_") and re.match(r"^_[a-z_]+$", name) and name in repo.text:
        return ""  # a naming convention's suffix (`_seconds`, `_total`), found inside names
    if re.match(r"^[A-Za-z]+(-[A-Za-z]+)+$", name) and name.lower() in repo.text_lower:
        return ""  # an HTTP header, spelled in any case
    if re.match(r"^[\w.]+: ?[\w.\"-]+$", name):  # a YAML setting: `priority: low`
        key, value = [x.strip().strip('"') for x in name.split(":", 1)]
        if key.split(".")[-1] in repo.text and value in repo.text:
            return ""
    if "." in name and re.match(r"^[a-z_][\w.]*$", name):  # a YAML path: pool.wait_for_capacity
        if all(('"' + seg + '"') in repo.text or (seg + ":") in repo.text for seg in name.split(".")):
            return ""
    return "%s found in no source, script or resource" % name


def names_in(span):
    """One code span may hold several names: `a`/`b`, lists, calls with arguments."""
    span = span.strip()
    if span in ALLOWED:
        return [span]
    if "(" in span and ")" in span and not CALL.match(span):
        # An expression: check each dotted name in it.
        return re.findall(r"(?<![\w$.])(?:[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+|[A-Z][\w$]+)", span)
    m = CALL.match(span)
    if m:
        return [m.group(1)]
    return [span]


def spans(markdown):
    """Inline code spans with the line each starts on; a span may run over a line break, fences are skipped."""
    lines = markdown.splitlines()
    kept, in_fence = [], False
    for line in lines:
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            kept.append("")
            continue
        kept.append("" if in_fence else line)
    text = "\n".join(kept)
    for m in re.finditer(r"`([^`]+)`", text):
        yield text.count("\n", 0, m.start()) + 1, " ".join(m.group(1).split())


def fenced_flags(markdown):
    """Command-line flags and KILN_* variables inside fenced blocks (the command synopsis), with their lines."""
    in_fence = False
    for lineno, line in enumerate(markdown.splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            for m in re.finditer(r"(?<![\w-])(--[a-z][\w-]*|KILN_[A-Z_]+\*?)", line):
                yield lineno, m.group(1)


# The canary: names that must be refused (each kind of check once) and names that must pass, so a checker that
# silently accepts everything fails its own run (--self-test).
MUST_FAIL = ["NoSuchClassAnywhere", "PoolManager.noSuchMethodHere", "--no-such-flag-here", "kiln_no_such_meter_total",
             "docs/no-such-file.md", "io.kiln.nosuchpkg", "kiln.no-such-store", "NO_SUCH_CONSTANT_HERE",
             "pool.no_such_field_here", "KILN_NO_SUCH_ENV", "GET /api/v1/nosuchroute", "kiln start --no-such-opt",
             "pools.nosuch.Engine", "DeadlineSweep", "SSEX", "kiln_pool_queue_dept"]
MUST_PASS = ["PoolManager", "io.kiln.runtime.time.Deadlines", "pools.spi.Engine", "FrontExchange.OFFLOAD_BYTES",
             "--warmup-seconds", "kiln_pool_queue_duration_seconds", "docs/llm.md", "models/*/fetch.sh",
             "io.kiln.runtime.gpu", "kiln.pool-load", "max_batch_size", "GET /api/v1/logs?node=", "KILN_NODE_ID"]


def self_test(repo):
    wrong = ["accepted `%s`" % n for n in MUST_FAIL if not check_one(repo, n)]
    wrong += ["refused `%s`: %s" % (n, check_one(repo, n)) for n in MUST_PASS if check_one(repo, n)]
    for w in wrong:
        print("self-test: " + w)
    print("self-test: %d names, %d wrong" % (len(MUST_FAIL) + len(MUST_PASS), len(wrong)), file=sys.stderr)
    return 1 if wrong else 0


def main(argv):
    root = repo_root()
    repo = Repo(root)
    if argv[1:2] == ["--self-test"]:
        return self_test(repo)
    doc = argv[1] if len(argv) > 1 else os.path.join(root, "ARCHITECTURE.md")
    with open(doc, encoding="utf-8") as fh:
        markdown = fh.read()
    found = [(lineno, name) for lineno, span in spans(markdown) for name in names_in(span)]
    found += list(fenced_flags(markdown))
    problems = []
    for lineno, name in sorted(found):
        why = check_one(repo, name)
        if why:
            problems.append("%s:%d: `%s`: %s" % (os.path.basename(doc), lineno, name, why))
    for p in problems:
        print(p)
    print("%d names checked, %d not found" % (len(found), len(problems)), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
