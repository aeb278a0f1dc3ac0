"""Records keep their types across every boundary: engine code reads them by attribute, never as
``x["field"]``. Subscripting with a record field's name is allowed only at the JSON edges:
the store (records ↔ Qdrant payloads), transcript and dataset parsing, HTTP replies, and exports."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from memsif import records
from memsif.answer.query import Answer
from tests import ROOT as REPO

ROOT = REPO / "memsif"
#: Modules that parse or write JSON documents whose keys happen to share record field names.
JSON_EDGES = {
    "store/qdrant.py", "transfer.py",        # Qdrant payloads; the export document
    "io/transcripts.py", "io/formats.py",          # transcript files (LoCoMo, LongMemEval, chat exports)
    "eval/data.py",                                # benchmark dataset files
    "llm/openai_backend.py",                       # HTTP replies of an OpenAI-compatible server
}


#: Field names too common to tell a record from another dict (a dataset's "question", a lock table's
#: "entities", a stage timer's "answer"): left out of the scan; the other fields of the same records
#: are distinctive enough to catch a record read as a dict.
GENERIC = {"id", "namespace", "question", "answer", "text", "model", "error", "seconds", "label", "entities",
           "time", "index", "kind", "type", "name", "title", "input_ids"}


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


# --------------------------------------------------------------------------- size
MAX_FUNCTION_LINES = 60
MAX_CLASS_LINES = 250
#: Functions and classes still over the limits, with their size when the limit was set: each may only
#: shrink, and leaves this table once it fits (the test says so). Nothing may join it.
STILL_OVER: dict[str, int] = {}


def _sizes() -> dict[str, tuple[int, int]]:
    """"file:name" → (lines, limit) of every function and class in ``memsif``."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
                out[f"{rel}:{node.name}"] = (node.end_lineno - node.lineno + 1, limit)
    return out


def test_no_function_over_60_lines_and_no_class_over_250_beyond_those_still_listed():
    sizes = _sizes()
    over = {name: lines for name, (lines, limit) in sizes.items() if lines > limit}
    new = [f"{n} ({lines} lines)" for n, lines in over.items() if n not in STILL_OVER]
    grown = [f"{n} ({lines} > {STILL_OVER[n]} lines)" for n, lines in over.items() if lines > STILL_OVER.get(n, lines)]
    fits = [n for n in STILL_OVER if n not in over]
    assert not new, "over the size limits (split them): " + ", ".join(new)
    assert not grown, "grew while over the limit: " + ", ".join(grown)
    assert not fits, "now within the limits, take them out of STILL_OVER: " + ", ".join(fits)


#: A file of the repository named in the package's text ("docs/results.md", "``benchmarks/quality/x.py``").
_POINTER = re.compile(r"(?<![\w/.-])((?:docs|benchmarks|memsif|tests|assets)/[\w/.-]*\w\.(?:md|py|jsonl|json|gz|txt))")


def test_every_file_the_package_points_to_exists_and_no_text_cites_a_document_the_project_lacks():
    missing, design = [], []
    for path in ROOT.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        missing += [f"{path.relative_to(ROOT.parent)}: {m}" for m in _POINTER.findall(text)
                    if not (ROOT.parent / m).exists()]
        design += [str(path.relative_to(ROOT.parent)) for _ in re.finditer(r"\bDESIGN\b", text)]
    assert not missing, f"pointers to files that do not exist: {missing}"
    assert not design, f"cite a DESIGN document the project does not have: {design}"


def _classes() -> dict[str, tuple[Path, ast.ClassDef]]:
    """Every class the package defines, by name, with its file."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ClassDef):
                found[node.name] = (path, node)
    return found


def _mixed(classes: dict[str, tuple[Path, ast.ClassDef]]) -> list[str]:
    """Classes made of two or more of the package's own classes (mixins): an object is one class, or holds
    its parts."""
    return sorted(f"{path.relative_to(ROOT)}:{name}" for name, (path, node) in classes.items()
                  if sum(ast.unparse(b).split(".")[-1] in classes for b in node.bases) > 1)


def test_no_class_is_mixed_from_the_packages_classes_and_no_part_casts_to_its_engine():
    classes = _classes()
    assert not _mixed(classes), "mixins (hold the parts instead): " + ", ".join(_mixed(classes))
    sample = {"A": (ROOT, ast.parse("class A: pass").body[0]), "B": (ROOT, ast.parse("class B: pass").body[0]),
              "C": (ROOT, ast.parse("class C(A, B): pass").body[0])}
    assert _mixed(sample) == [f"{Path('.')}:C"]  # the check sees one
    casts = [f"{p.relative_to(ROOT)}" for p in ROOT.rglob("*.py") if re.search(r"cast\((EngineCore|\"EngineCore)",
                                                                                p.read_text())]
    assert not casts and "EngineCore" not in classes


def test_one_back_end_bundle_and_the_profile_resolved_only_where_the_model_loads():
    """``memsif.backends.Backends`` is the one bundle every pipeline takes (no Protocol of back-ends beside it),
    and a model's profile is looked up by name only in ``memsif.llm`` (``configured_profile``, which
    ``Backends.profile`` calls once)."""
    classes = _classes()
    bundles = [name for name, (_, node) in classes.items()
               if ("Backends" in name and name != "Backends") or name in ("FactBackends", "EngineCore")]
    assert not bundles and classes["Backends"][0] == ROOT / "backends.py"
    lookups = sorted(f"{p.relative_to(ROOT)}" for p in ROOT.rglob("*.py")
                     if "profile_of(" in p.read_text() and p.parent.name != "llm")
    assert not lookups, "a model's profile looked up by name outside the model loader: " + ", ".join(lookups)
    assert "configured_profile(" in (ROOT / "backends.py").read_text()
