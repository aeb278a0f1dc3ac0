"""The import graph of ``memsif`` runs one way: no module imports, directly or through
others, a module that imports it, and no module imports one of a higher layer. Every import counts,
those inside functions and under ``TYPE_CHECKING`` too: a late import is still a dependency.

The layers, lowest first (a module may import its own layer's modules or lower ones):

0. foundations: records, errors, config, timeparse, lexical, matching, entities, locks, answer.language
1. back-ends and what they read: embed, llm, store, prompts, io, and their bundle (backends)
2. the method's steps: interaction (Structured Interaction Memory), facts (Dual-Track Fact Memory),
   answer.check, answer.relevance
3. pipelines: ingest, answer.retrieval, answer.query (question answering, §3.5, is the ``answer``
   package), transfer, upgrade
4. the engine and its parts (the ``engine`` package), and the public surface (``memsif``, ``memsif.__all__``)
5. what uses the engine: eval, viz, cli, inspector (the inspector through ``memsif``'s public names)
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

from tests import ROOT as REPO

ROOT = REPO / "memsif"

LAYERS: dict[str, int] = {
    "memsif": 4, "memsif.records": 0, "memsif.errors": 0, "memsif.config": 0, "memsif.timeparse": 0,
    "memsif.lexical": 0, "memsif.matching": 0, "memsif.entities": 0, "memsif.locks": 0,
    "memsif.answer.language": 0, "memsif.answer.places": 0, "memsif.answer.when": 0, "memsif.answer": 0,
    "memsif.files": 0, "memsif.markdown": 0, "memsif.delegated": 0,
    "memsif.embed": 1, "memsif.backends": 1, "memsif.llm": 1, "memsif.store": 1, "memsif.prompts": 1, "memsif.io": 1,
    "memsif.interaction": 2, "memsif.facts": 2, "memsif.answer.check": 2, "memsif.answer.relevance": 2,
    "memsif.answer.gate": 2,
    "memsif.ingest": 3, "memsif.answer.retrieval": 3, "memsif.answer.context": 3, "memsif.answer.accumulation": 3,
    "memsif.answer.query": 3, "memsif.transfer": 3,
    "memsif.upgrade": 3,
    "memsif.engine": 4,
    "memsif.api": 5,
    "memsif.eval": 5, "memsif.viz": 5, "memsif.cli": 5, "memsif.__main__": 5, "memsif.inspector": 5,
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> nx.DiGraph:
    """Every ``memsif`` module → the ``memsif`` modules it imports (a package's ``__init__`` is the
    package's name; ``from memsif.x import y`` is an arrow to ``memsif.x.y`` when that is a module)."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            for target in targets:
                if target in modules and target != name:
                    graph.add_edge(name, target)
    return graph


def layer(module: str) -> int:
    """The layer of ``module``: that of its longest listed prefix."""
    parts = module.split(".")
    for k in range(len(parts), 0, -1):
        if ".".join(parts[:k]) in LAYERS:
            return LAYERS[".".join(parts[:k])]
    raise KeyError(f"{module} has no layer: add it to LAYERS")


def test_every_module_has_a_layer():
    for module in import_graph():
        layer(module)


def test_no_import_circle():
    circles = [sorted(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1]
    assert not circles, f"import circles: {circles}"


def test_no_arrow_runs_up_the_layers():
    graph = import_graph()
    upward = [f"{a} (layer {layer(a)}) → {b} (layer {layer(b)})" for a, b in graph.edges if layer(b) > layer(a)]
    assert not upward, "imports of a higher layer:\n" + "\n".join(sorted(upward))


def test_the_graph_sees_late_and_type_checking_imports():
    """The checks above can fail: the engine imports the pipelines (late imports included)."""
    graph = import_graph()
    assert graph.has_edge("memsif.engine", "memsif.ingest") and graph.has_edge("memsif.ingest", "memsif.backends")
    assert graph.has_edge("memsif.engine", "memsif.answer.query")  # imported inside a method
    assert layer("memsif.store.qdrant") == 1 and layer("memsif.inspector.demo") == 5


#: The inspector's tabs: each builds its components and handlers; demo.py wires the events across them.
TABS = {f"memsif.inspector.{t}" for t in ("build", "chat", "trajectories", "corefacts", "activefacts", "search",
                                           "evaluate", "settings")}


def test_no_tab_imports_another_tab():
    """A tab needs another's handler only through the Protocols of ``inspector.common`` (the Tab contract),
    handed over by ``demo.build_demo``."""
    graph = import_graph()
    assert TABS <= set(graph), TABS - set(graph)
    crossing = sorted(f"{a} → {b}" for a, b in graph.edges if a in TABS and b in TABS)
    assert not crossing, "tabs importing tabs:\n" + "\n".join(crossing)
    assert graph.has_edge("memsif.inspector.demo", "memsif.inspector.chat"), "the check sees the wiring's imports"


#: Beside the engine's public names the inspector may import its own modules and its neighbours in the top
#: layer: the views (viz), the evaluation harness (Evaluate tab) and the text escaping the views share.
INSPECTOR_NEIGHBOURS = ("memsif.inspector", "memsif.viz", "memsif.markdown")
#: The public surfaces the inspector may import names of: the engine's and the evaluation lenses'.
SURFACES = ("memsif", "memsif.eval")


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """Every ``import memsif…`` and ``from memsif… import names`` of ``path``, late ones too."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("memsif")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("memsif"):
            found.append((node.module, [a.name for a in node.names]))
    return found


def test_the_inspector_imports_only_the_engines_public_names():
    import importlib

    offered = {module: set(importlib.import_module(module).__all__) for module in SURFACES}
    assert all(hasattr(importlib.import_module(m), n) for m, names in offered.items() for n in names)
    inside, outside = [], []
    for path in sorted((ROOT / "inspector").glob("*.py")):
        for module, names in _imports(path):
            if module in offered:
                outside += [f"{path.name}: {module}.{n}" for n in names if n not in offered[module]]
            elif not module.startswith(INSPECTOR_NEIGHBOURS):
                inside.append(f"{path.name}: {module}")
    assert not inside, "the inspector reaches into the engine:\n" + "\n".join(inside)
    assert not outside, "names the public surfaces do not offer:\n" + "\n".join(outside)


def test_the_public_surface_is_the_documented_one_and_every_name_resolves():
    """``memsif.__all__`` is the surface its docstring lists, each name importable, the internals not in it."""
    import memsif

    assert {"MemSIF", "MemSIFConfig", "Backends", "ModelProfile", "Answer", "CoreFact", "load_transcripts",
            "MemSIFError", "job"} <= set(memsif.__all__)
    assert not {"decision_threshold", "trajectory_terms", "workload", "profile_of"} & set(memsif.__all__)
    assert all(getattr(memsif, name) is not None for name in memsif.__all__)
    assert memsif.MemSIF.__module__ == "memsif.engine" and "Backends" in (memsif.__doc__ or "")


#: The entry points, the only modules that build settings from the environment (``MemSIFConfig.from_env``),
#: and the one place that reads it. ``llm.llamacpp_cpu`` reads and sets llama.cpp's own GGML_BACKEND_PATH
#: (which CPU library llama.cpp loads), no MemSIF setting.
ENTRY_POINTS = {"memsif.cli", "memsif.__main__", "memsif.eval.cli", "memsif.config", "memsif.llm.llamacpp_cpu"}


def _reads_environment(tree: ast.AST) -> list[int]:
    """Lines of ``tree`` that read the environment: ``os.environ``, ``os.getenv``, ``from_env(...)``."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb", "from_env"):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and \
                {a.name for a in node.names} & {"environ", "getenv", "environb"}:
            lines.append(node.lineno)
    return sorted(lines)


def test_nothing_below_the_entry_points_reads_the_environment():
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    assert ENTRY_POINTS <= set(modules)
    readers = [f"{name}:{line}" for name, path in sorted(modules.items()) if name not in ENTRY_POINTS
               for line in _reads_environment(ast.parse(path.read_text(), filename=str(path)))]
    assert not readers, "settings read below the entry points (build them with MemSIFConfig.from_env at an " \
                        "entry point and hand them down):\n" + "\n".join(readers)
    assert _reads_environment(ast.parse("import os\nx = os.environ.get('A')\nc = MemSIFConfig.from_env()")) == [2, 3]
