"""Writes the reference.json files: indented, but a list of plain values (ids, a vector) stays on one line."""
import json


def dumps(value, indent=""):
    inner = indent + " "
    if isinstance(value, dict):
        items = (f"{inner}{json.dumps(k)}: {dumps(v, inner)}" for k, v in value.items())
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return "[\n" + ",\n".join(inner + dumps(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value, ensure_ascii=False)


def write(path, value):
    with open(path, "w", encoding="utf-8") as f:
        f.write(dumps(value) + "\n")
