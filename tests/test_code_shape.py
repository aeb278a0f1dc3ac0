"""Records keep their types across every boundary: engine code reads them by attribute, never as
``x["field"]`` (issue 16). Subscripting with a record field's name is allowed only at the JSON edges:
the store (records ↔ Qdrant payloads), transcript and dataset parsing, HTTP replies, and exports."""

from __future__ import annotations

import ast
from pathlib import Path

from memsif import records
from memsif.query import Answer

ROOT = Path(__file__).resolve().parents[1] / "memsif"
#: Modules that parse or write JSON documents whose keys happen to share record field names.
JSON_EDGES = {
    "store/qdrant.py", "transfer.py",        # Qdrant payloads; the export document
    "io/transcripts.py", "io/formats.py",          # transcript files (LoCoMo, LongMemEval, chat exports)
    "eval/data.py",                                # benchmark dataset files
    "eval/runner.py",                              # its per-question result rows, written as JSON lines
    "llm/openai_backend.py",                       # HTTP replies of an OpenAI-compatible server
}


#: Field names too common to tell a record from another dict (a dataset's "question", a lock table's
#: "entities", a stage timer's "answer"): left out of the scan; the other fields of the same records
#: are distinctive enough to catch a record read as a dict.
GENERIC = {"id", "namespace", "question", "answer", "text", "model", "error", "seconds", "label", "entities",
           "time", "index", "kind", "type", "name"}


def _record_fields() -> set[str]:
    names: set[str] = set(Answer.model_fields)
    for value in vars(records).values():
        if isinstance(value, type) and issubclass(value, records.BaseModel):
            names |= set(value.model_fields)
    return names - GENERIC


def test_no_record_is_read_as_a_dict_outside_the_json_edges():
    fields = _record_fields()
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in JSON_EDGES:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            key = None
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                key = node.slice.value
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                  and node.args and isinstance(node.args[0], ast.Constant)):
                key = node.args[0].value
            if isinstance(key, str) and key in fields:
                offenders.append(f"{rel}:{node.lineno} [{key!r}]")
    assert not offenders, "records read as dicts (use attributes):\n" + "\n".join(offenders)


def test_the_guard_sees_dict_access():
    """The scan above finds what it is meant to find."""
    tree = ast.parse('d["seq"] + x.get("statement", 0)')
    keys = {n.slice.value for n in ast.walk(tree) if isinstance(n, ast.Subscript)}
    keys |= {n.args[0].value for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert keys <= _record_fields() and keys == {"seq", "statement"}
