"""Export a namespace as JSON, import it back (same or new name), refuse bad imports."""

import json

import pytest

from memsif.errors import EmbedderError, MemSIFError
from tests.fakes import HashEmbedder
from tests.test_query import _engine


def _snapshot(engine, ns):
    strip = lambda rows: [r.model_dump(mode="json", exclude={"namespace"}) for r in rows]  # noqa: E731
    return (
        [s.model_dump(exclude={"namespace"}) for s in engine.segments(ns)],
        [t.model_dump(exclude={"namespace"}) for t in engine.trajectories(ns)],
        strip(engine.decisions(ns)),
        [f.model_dump(exclude={"namespace"}) for f in engine.facts(ns, history=True)],
        strip(engine.fact_log(ns)),
        strip(engine.clusters(ns)),
        strip(engine.active_facts(ns)),
    )


def test_export_import_round_trip(engine_factory):
    engine, _ = _engine(engine_factory, sufficient=0.1)
    engine.ask("Where did Melanie go camping?", namespace="t")
    before = _snapshot(engine, "t")
    data = json.loads(json.dumps(engine.export_namespace("t")))  # really JSON
    engine.delete_namespace("t")
    assert engine.import_namespace(data) == "t"
    assert _snapshot(engine, "t") == before
    assert engine.import_namespace(data, namespace="copy") == "copy"
    assert _snapshot(engine, "copy") == before
    with pytest.raises(MemSIFError, match="already holds memory"):
        engine.import_namespace(data)


def test_bad_imports_are_refused(engine_factory):
    engine, _ = _engine(engine_factory, sufficient=0.1)
    data = engine.export_namespace("t")
    with pytest.raises(MemSIFError, match="Not a MemSIF namespace export"):
        engine.import_namespace({"format": "something else"})
    other = engine_factory(embedder=HashEmbedder(dim=32, name="other"))
    with pytest.raises(EmbedderError, match="MEMSIF_EMBEDDER_MODEL"):
        other.import_namespace(data, namespace="x")
