"""Export a namespace as JSON, import it back (same or new name), refuse bad imports."""

import json

import pytest

from memsif.errors import EmbedderError, MemSIFError
from tests.answer.test_query import _engine
from tests.fakes import HashEmbedder


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
    (b"", "not JSON"), (b"\x1f\x8b\x08\x00garbage", "damaged export: its gzip-compressed data is"),
    (b"\xff\xfe{", "not JSON"), (b'{"format": "other"}', None)])
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
    from memsif.config import PACKAGED_LLM, MemSIFConfig
    from memsif.inspector.build import EXAMPLE, EXAMPLE_MEMORY, EXAMPLE_QUESTIONS
    from memsif.io import as_memories, load_transcripts
    from memsif.transfer import content_fingerprint, read_export

    data = read_export(EXAMPLE_MEMORY)
    made = data.provenance
    assert made["llm_model"] == PACKAGED_LLM and made["embedder"] == data.embedder == "all-MiniLM-L6-v2"
    assert {"built", "machine", "structure_seconds", "core_facts_seconds", "command"} <= set(made)
    assert made["content"] == content_fingerprint(MemSIFConfig()), \
        "the prebuilt memory was made with other models or settings than the defaults: rebuild it"
    assert len(made["questions"]) >= EXAMPLE_QUESTIONS and made["active_facts"] == len(data.active_facts) >= 1
    [conv] = as_memories(load_transcripts(EXAMPLE))
    assert [m.message.id for m in data.messages] == [m.id for m in conv.messages]
    assert [m.message.text for m in data.messages] == [m.text for m in conv.messages], \
        "the prebuilt memory is of another version of the bundled transcript: rebuild it"
    in_segments = [i for s in data.segments for i in s.message_ids]
    assert sorted(in_segments) == sorted(m.id for m in conv.messages)
    assert all(s.trajectory_id for s in data.segments)
    session_of = {m.id: m.session_id for m in conv.messages}
    spanning = [s.id for s in data.segments if len({session_of[i] for i in s.message_ids}) > 1]
    assert not spanning, f"segments {spanning} span two sessions (a new session opens a segment): rebuild it"
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


def _exported(engine_factory) -> tuple:
    engine, _ = _engine(engine_factory, sufficient=0.1)
    engine.ask("Where did Melanie go camping?", namespace="t")
    return engine, json.loads(engine.export_namespace("t").model_dump_json())


def _cli(engine, monkeypatch, capsys, *args: str) -> tuple[int, str]:
    """``python -m memsif ARGS`` in this process over ``engine``; (exit code, stderr)."""
    from memsif import cli

    monkeypatch.setattr(cli, "_engine", lambda _args, **_kw: engine)
    code = cli.main(list(args))
    return code, capsys.readouterr().err


def test_an_export_of_a_newer_format_says_to_upgrade_wherever_it_is_read(engine_factory, tmp_path, monkeypatch,
                                                                        capsys):
    """A format this version cannot read is named, with the newest it reads and what to do: from a
    file, from a decoded document (the Python API) and on the command line."""
    from memsif.transfer import read_export

    engine, data = _exported(engine_factory)
    newer = {**data, "format": "memsif-namespace/2", "namespace": "newer"}
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(newer))
    said = r"made by a newer MemSIF \(format 2; this one reads up to 1\); upgrade MemSIF to read it"
    with pytest.raises(MemSIFError, match=said):
        read_export(path)
    with pytest.raises(MemSIFError, match=said):
        engine.import_namespace(newer)
    code, err = _cli(engine, monkeypatch, capsys, "import", str(path))
    assert code == 2 and "made by a newer MemSIF (format 2; this one reads up to 1)" in err and "Traceback" not in err
    assert "newer" not in engine.namespaces()
    with pytest.raises(MemSIFError, match="made by a newer MemSIF"):  # says it reads as a format that is newer still
        engine.import_namespace({**newer, "format": "memsif-namespace/3", "readable_as": "memsif-namespace/2"})


def test_a_newer_export_readable_by_this_version_is_read_and_its_unknown_fields_left_out_with_a_warning(
        engine_factory, tmp_path, monkeypatch, capsys):
    """A newer export that says this format may read it is read; fields no record of this version has
    (top level, nested, in a list, in a union's branch) are left out, each named once in one warning
    with how often; what is known arrives intact. An export of this format with unknown fields too."""
    from memsif.errors import ExportWarning
    from memsif.transfer import read_export

    engine, data = _exported(engine_factory)
    before = _snapshot(engine, "t")
    newer = json.loads(json.dumps(data))
    newer.update({"format": "memsif-namespace/2", "readable_as": "memsif-namespace/1", "mood_index": {"x": 1}})
    for m in newer["messages"]:
        m["message"]["reaction"] = "👍"
    newer["decisions"][0]["attention"] = 0.5
    with pytest.warns(ExportWarning) as caught:
        assert engine.import_namespace(newer, namespace="from-newer") == "from-newer"
    [warned] = [str(w.message) for w in caught]
    n = len(newer["messages"])
    assert f"messages[].message.reaction ({n}×)" in warned and "mood_index" in warned, warned
    assert "decisions[].segment.attention" in warned and "format 2" in warned, warned
    assert _snapshot(engine, "from-newer") == before
    assert newer["mood_index"] == {"x": 1} and newer["messages"][0]["message"]["reaction"] == "👍"  # caller's untouched

    same = {**data, "namespace": "t2", "added_later": True}
    path = tmp_path / "same.json.gz"
    path.write_bytes(__import__("gzip").compress(json.dumps(same).encode()))
    with pytest.warns(ExportWarning, match="left out: added_later"):
        read_export(path)
    code, err = _cli(engine, monkeypatch, capsys, "import", str(path))
    assert code == 0 and f"warning: {path}: " in err and "added_later" in err and "Traceback" not in err, err
    assert _snapshot(engine, "t2") == before


@pytest.mark.parametrize(("damage", "said"), [
    ("gzip cut short", "gzip-compressed data is cut short"),
    ("json cut short", "its JSON ends early"),
    ("field missing", r"damaged \(1 problem\(s\): messages: Field required\); export the namespace again"),
    ("field malformed", "damaged .*dim: Input should be a valid integer"),
])
def test_a_damaged_export_is_still_refused_saying_what_to_do(engine_factory, tmp_path, damage, said):
    import gzip

    from memsif.transfer import read_export

    _, data = _exported(engine_factory)
    text = json.dumps(data).encode()
    path = tmp_path / "damaged.json"
    if damage == "gzip cut short":
        path.write_bytes(gzip.compress(text)[:-200])
    elif damage == "json cut short":
        path.write_bytes(text[:len(text) // 2])
    elif damage == "field missing":
        path.write_text(json.dumps({k: v for k, v in data.items() if k != "messages"}))
    else:
        path.write_text(json.dumps({**data, "dim": "wide"}))
    with pytest.raises(MemSIFError, match=said) as refused:
        read_export(path)
    assert "again" in str(refused.value)


def _folder(path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in path.parent.iterdir()}


@pytest.mark.parametrize("name", ["memory.json", "memory.json.gz"])
def test_a_failed_export_leaves_the_previous_one_as_it_was(engine_factory, tmp_path, monkeypatch, capsys, name):
    """A write that fails part-way (the disk fills up) ends in one error naming the path and the
    reason; the export that was there is unchanged byte for byte and no partial file is left."""
    import errno

    from memsif import files
    from memsif.errors import FileWriteError
    from memsif.transfer import write_export

    engine, _ = _exported(engine_factory)
    path = write_export(engine.export_namespace("t"), tmp_path / name)
    before = _folder(path)
    engine.ask("What did Caroline research?", namespace="t")  # the memory grew: the next export differs

    class FullDisk:
        def __init__(self, real):
            self.real = real

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.real.close()

        def write(self, payload):
            self.real.write(payload[:len(payload) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.real, name)

    monkeypatch.setattr(files, "open", lambda *a, **k: FullDisk(open(*a, **k)), raising=False)
    with pytest.raises(FileWriteError) as failed:
        write_export(engine.export_namespace("t"), path)
    said = str(failed.value)
    assert str(path) in said and "No space left on device" in said and f"the {name} that was there is unchanged" \
        in said, said
    assert _folder(path) == before
    code, err = _cli(engine, monkeypatch, capsys, "export", str(path), "--namespace", "t")
    assert code == 2 and err.startswith("error: Cannot write the export") and "Traceback" not in err, err
    assert _folder(path) == before


def test_an_export_over_the_file_size_limit_leaves_the_previous_one_as_it_was(engine_factory, tmp_path):
    """The real failure, in a process whose file-size limit (RLIMIT_FSIZE) is below the export's size."""
    import subprocess
    import sys

    from memsif.transfer import write_export

    engine, _ = _exported(engine_factory)
    path = write_export(engine.export_namespace("t"), tmp_path / "memory.json")
    before = _folder(path)
    script = (
        "import resource, signal, sys\n"
        "from memsif.errors import FileWriteError\n"
        "from memsif.transfer import read_export, write_export\n"
        f"data = read_export({str(path)!r})\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "try:\n"
        f"    write_export(data, {str(path)!r})\n"
        "except FileWriteError as exc:\n"
        "    sys.exit(str(exc))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "File too large" in done.stderr and "unchanged" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert _folder(path) == before

