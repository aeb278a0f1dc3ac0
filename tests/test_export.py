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
    data = json.loads(engine.export_namespace("t").model_dump_json())  # really JSON
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


@pytest.mark.parametrize("name", ["memory.json", "memory.json.gz"])
def test_an_export_file_round_trips_plain_or_gzip_and_rounded_vectors_keep_retrieval(engine_factory, tmp_path, name):
    import numpy as np

    from memsif.transfer import read_export, write_export

    engine, _ = _engine(engine_factory, sufficient=0.1)
    engine.ask("Where did Melanie go camping?", namespace="t")
    exact = engine.export_namespace("t")
    made = engine.export_namespace("t", decimals=4, provenance={"model": "fake-llm", "built": "2026-12-01"})
    path = write_export(made, tmp_path / name)
    data = read_export(path)
    assert data.provenance == {"model": "fake-llm", "built": "2026-12-01"}
    for kept, full in zip(data.messages, exact.messages, strict=True):
        assert np.abs(np.asarray(kept.vector) - np.asarray(full.vector)).max() <= 5e-5
    engine.import_namespace(data, namespace="copy")
    assert _snapshot(engine, "copy")[:5] == _snapshot(engine, "t")[:5]
    asked = engine.ask("Where did Melanie go camping?", namespace="copy")
    original = engine.ask("Where did Melanie go camping?", namespace="t")
    assert [e.source_message_ids for e in asked.evidence_used] == [e.source_message_ids for e in original.evidence_used]


@pytest.mark.parametrize(("content", "said"), [
    (b"", "not JSON"), (b"\x1f\x8b\x08\x00garbage", "not JSON or gzip"), (b"\xff\xfe{", "not JSON"),
    (b'{"format": "other"}', None)])
def test_a_bad_export_file_gets_a_clear_error(engine_factory, tmp_path, content, said):
    from memsif.transfer import read_export

    path = tmp_path / "bad.json.gz"
    path.write_bytes(content)
    if said is None:  # JSON, but not an export: the import names the expected format
        engine, _ = _engine(engine_factory, sufficient=0.1)
        with pytest.raises(MemSIFError, match="Not a MemSIF namespace export"):
            engine.import_namespace(read_export(path))
        return
    with pytest.raises(MemSIFError, match=said):
        read_export(path)
    with pytest.raises(MemSIFError, match="Cannot read the export"):
        read_export(tmp_path / "missing.json")


def test_the_shipped_example_memory_is_the_bundled_conversation_built_by_the_default_models(engine_factory):
    """``assets/example-memory-conv-26.json.gz`` (benchmarks/build_example.py) holds every message of the
    bundled conv-26 in Topical Segments and Event Trajectories, CoreFacts with their log, the clusters its
    questions left, and how it was built; it imports into a store of the default embedder."""
    from memsif.config import PACKAGED_LLM
    from memsif.inspector.build import EXAMPLE, EXAMPLE_MEMORY, EXAMPLE_QUESTIONS
    from memsif.io import as_memories, load_transcripts
    from memsif.transfer import read_export

    data = read_export(EXAMPLE_MEMORY)
    made = data.provenance
    assert made["llm_model"] == PACKAGED_LLM and made["embedder"] == data.embedder == "all-MiniLM-L6-v2"
    assert {"built", "machine", "structure_seconds", "core_facts_seconds", "command"} <= set(made)
    assert len(made["questions"]) >= EXAMPLE_QUESTIONS and made["active_facts"] == len(data.active_facts) >= 1
    [conv] = as_memories(load_transcripts(EXAMPLE))
    assert [m.message.id for m in data.messages] == [m.id for m in conv.messages]
    assert [m.message.text for m in data.messages] == [m.text for m in conv.messages], \
        "the prebuilt memory is of another version of the bundled transcript: rebuild it"
    in_segments = [i for s in data.segments for i in s.message_ids]
    assert sorted(in_segments) == sorted(m.id for m in conv.messages)
    assert all(s.trajectory_id for s in data.segments)
    current = [f.fact for f in data.facts if f.fact.status == "current"]
    assert len(current) >= 30 and data.fact_ops and all(f.verified for f in current)
    assert data.clusters, "its questions left no candidate clusters"
    engine = engine_factory(embedder=HashEmbedder(dim=data.dim, name="all-MiniLM-L6-v2"))
    engine.import_namespace(data, namespace="example")
    assert len(engine.segments("example")) == len(data.segments) and engine.clusters("example")


def test_an_import_takes_the_stored_lexical_vectors_of_its_version_and_encodes_others_again(engine_factory,
                                                                                             monkeypatch):
    from memsif import lexical

    engine, _ = _engine(engine_factory, sufficient=0.1)
    data = json.loads(engine.export_namespace("t").model_dump_json())
    before = engine.store.sentence_lexical("t")

    def never(*args, **kwargs):
        raise AssertionError("encoded again although the export holds this version's vectors")

    with monkeypatch.context() as m:
        m.setattr(lexical, "encode_documents", never)
        engine.import_namespace(data, namespace="same")
    assert engine.store.sentence_lexical("same") == before
    engine.import_namespace({**data, "lexical_version": lexical.VERSION - 1}, namespace="older")
    assert engine.store.sentence_lexical("older") == before  # encoded again, by this version
