"""Values that remember where they came from, so that table.py can prove no figure in RELIABILITY.md is typed.

table.py reads every results file through load() below: each number and string in it becomes a TInt, TFloat or TStr
that keeps the file's name through arithmetic (a sum of two files' counts names both) and, when formatted into
text, brackets its text with the name. Text typed into table.py carries no bracket. strip() removes the brackets
for the document; typed_numerals() finds every numeral outside them. Two kinds of typed text are declared instead
of hidden: an HTTP status used as a word (http(503)), and a setting (setting(...)) that names the file and the exact
snippet that sets it, so a check can confirm the snippet is still there.

Standard library only; no I/O except load() and the settings check reading the files they name.
"""
import json
import pathlib
import re

OPEN, SEP, CLOSE = "\ue000", "\ue001", "\ue002"
HTTP = "http-status"
SETTING = "setting:"
_SPAN = re.compile(OPEN + "([^" + SEP + "]*)" + SEP + "([^" + CLOSE + "]*)" + CLOSE)
_HEADER = re.compile(OPEN + "[^" + SEP + "]*" + SEP)
# A numeral on its own: not part of a name (n1, p99, v2, 5xx, 10x, x2) or of a longer token (127.0.0.1).
_NUMERAL = re.compile(r"(?<![\w.:@/])\d+(?:[.,]\d+)*(?![\w])")

settings = []


def _mark(src, text):
    return f"{OPEN}{src}{SEP}{text}{CLOSE}"


def _src(*values):
    names = {s for v in values for s in getattr(v, "src", "").split("+") if s}
    return "+".join(sorted(names))


def _plain(v):
    if isinstance(v, TInt):
        return int(v)
    if isinstance(v, TFloat):
        return float(v)
    return v


def _wrap(result, src):
    if isinstance(result, bool) or not src:
        return result
    if isinstance(result, int):
        return TInt(result, src)
    if isinstance(result, float):
        return TFloat(result, src)
    return result


class TInt(int):
    def __new__(cls, value, src):
        self = int.__new__(cls, value)
        self.src = src
        return self

    def __format__(self, spec):
        return _mark(self.src, int.__format__(int(self), spec))

    def __str__(self):
        return self.__format__("")


class TFloat(float):
    def __new__(cls, value, src):
        self = float.__new__(cls, value)
        self.src = src
        return self

    def __format__(self, spec):
        return _mark(self.src, float.__format__(float(self), spec))

    def __str__(self):
        return self.__format__("")


class TStr(str):
    def __new__(cls, value, src):
        self = str.__new__(cls, value)
        self.src = src
        return self

    def __format__(self, spec):
        return _mark(self.src, str.__format__(str.__str__(self), spec))

    def __str__(self):
        return self.__format__("")


def _binary(name):
    def method(self, other):
        result = getattr(_plain(self), name)(_plain(other))
        return result if result is NotImplemented else _wrap(result, _src(self, other))
    return method


def _unary(name):
    def method(self):
        return _wrap(getattr(_plain(self), name)(), self.src)
    return method


for _cls in (TInt, TFloat):
    for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"):
        setattr(_cls, f"__{_name}__", _binary(f"__{_name}__"))
        setattr(_cls, f"__r{_name}__", _binary(f"__r{_name}__"))
    for _name in ("__neg__", "__pos__", "__abs__"):
        setattr(_cls, _name, _unary(_name))


def parse(text, src=None):
    """JSON text whose numbers, object keys and string values carry src (by default the text's own, if traced)."""
    src = src or getattr(text, "src", "")
    if not src:
        return json.loads(text)

    def obj(pairs):
        return {TStr(k, src): TStr(v, src) if type(v) is str else v for k, v in pairs}
    return json.loads(str.__str__(text), parse_int=lambda s: TInt(int(s), src),
                      parse_float=lambda s: TFloat(float(s), src), object_pairs_hook=obj)


def load(path):
    """The JSON file at path, every value traced to the file's name."""
    path = pathlib.Path(path)
    return parse(path.read_text(encoding="utf-8"), path.name)


def derived(value, *sources):
    """value computed from results files (a count of a JSON object's keys, a slice of its string, a file's size)
    traced to them: sources are traced values or file names."""
    src = _src(*(TStr("", s) if type(s) is str else s for s in sources))
    if isinstance(value, str):
        return TStr(value, src) if src else value
    return _wrap(value, src)


def http(code):
    """An HTTP status used as a word ("a clean 503"), not a figure."""
    assert 100 <= code <= 599, code
    return _mark(HTTP, str(code))


def setting(text, path, *snippets):
    """Text typed from a setting of a test or script: path (from the repository root) must hold every snippet, and
    every numeral of text must appear in one of them; check_settings() verifies both."""
    settings.append((text, path, snippets))
    return _mark(SETTING + path, text)


def strip(text):
    """text without its provenance brackets, as the document shows it."""
    return _HEADER.sub("", text).replace(CLOSE, "")


def sources(text):
    """Every results file named in text's brackets."""
    return {s for src, _ in _SPAN.findall(text) for s in src.split("+") if s.endswith(".json") or s.endswith(".html")}


def spans(text):
    """(source, text) of every bracketed span in text."""
    return _SPAN.findall(text)


def typed_numerals(text):
    """Every numeral in text that no bracket covers."""
    return _NUMERAL.findall(_SPAN.sub(" ", text))


def check_settings(root):
    """Problems with the declared settings: a file or snippet that is gone, a numeral no snippet holds."""
    problems = []
    for text, path, snippets in dict.fromkeys(settings):
        f = pathlib.Path(root) / path
        body = f.read_text(encoding="utf-8") if f.is_file() else None
        if body is None:
            problems.append(f"setting '{text}': {path} does not exist")
            continue
        for s in snippets:
            if s not in body:
                problems.append(f"setting '{text}': {path} no longer holds {s!r}")
        for num in _NUMERAL.findall(text):
            digits = re.compile(r"(?<!\d)" + re.escape(num.replace(",", "")) + r"(?!\d)")
            if not any(digits.search(s.replace("_", "")) for s in snippets):
                problems.append(f"setting '{text}': {num} is in none of its snippets {snippets}")
    return problems
