"""Persistence in embedded Qdrant: reopen gives back the same memory; bad input stores nothing."""

import subprocess
import sys

import pytest

from memsif.errors import EmbedderError, NotFoundError, TranscriptError
from memsif.io import load_transcripts
from memsif.store import MemoryStore
from tests.conftest import make_messages
from tests.fakes import FakeLLM, HashEmbedder

TEXTS = ["I adopted a dog named Max", "Max is a beagle puppy", "The stock market fell today",
         "Bonds and stocks are down", "Max chewed my shoes again"]


def _engine(engine_factory, path):
    return engine_factory(llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.7}),
                          store=MemoryStore(path=path))


def test_reopen_gives_back_the_same_memory(engine_factory, tmp_path):
    path = tmp_path / "q"
    first = _engine(engine_factory, path)
    first.ingest(make_messages(TEXTS))
    before = (first.segments("t"), first.trajectories("t"), first.decisions("t"), first.messages("t"))
    first.close()
    second = _engine(engine_factory, path)
    after = (second.segments("t"), second.trajectories("t"), second.decisions("t"), second.messages("t"))
    assert after == before
    assert second.namespaces() == ["t"]


def test_reopen_in_a_new_process(engine_factory, tmp_path):
    path = tmp_path / "q"
    engine = _engine(engine_factory, path)
    engine.ingest(make_messages(TEXTS))
    expected = [s.message_ids for s in engine.segments("t")]
    engine.close()
    code = ("import sys; from memsif.store import MemoryStore; s = MemoryStore(path=sys.argv[1]); "
            "print([x.message_ids for x in s.segments('t')])")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(expected)


def test_second_ingest_continues_and_is_idempotent(engine_factory, tmp_path):
    engine = _engine(engine_factory, tmp_path / "q")
    msgs = make_messages(TEXTS)
    engine.ingest(msgs[:3])
    report = engine.ingest(msgs)  # first three already stored
    assert report.skipped == 3 and report.messages == 2
    assert [m.id for m in engine.messages("t")] == [m.id for m in msgs]
    assert [m.index for m in engine.messages("t")] == list(range(5))
    all_ids = [mid for s in engine.segments("t") for mid in s.message_ids]
    assert all_ids == [m.id for m in msgs]
    again = engine.ingest(msgs)
    assert again.messages == 0 and len(engine.messages("t")) == 5
    seqs = [d.seq for d in engine.decisions("t")]
    assert seqs == list(range(len(seqs)))


def test_namespaces_are_isolated(engine_factory):
    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.7}))
    engine.ingest(make_messages(TEXTS, namespace="alice"))
    engine.ingest(make_messages(TEXTS[:2], namespace="bob"))
    assert len(engine.messages("bob")) == 2
    engine.delete_namespace("alice")
    with pytest.raises(NotFoundError, match="alice"):
        engine.segments("alice")
    assert engine.namespaces() == ["bob"]


def test_malformed_transcript_stores_nothing(engine_factory, tmp_path):
    engine = _engine(engine_factory, tmp_path / "q")
    engine.ingest(make_messages(TEXTS))
    snapshot = (engine.segments("t"), engine.decisions("t"))
    bad = tmp_path / "bad.json"
    bad.write_text('[{"sample_id": "t", "conversation": {"session_1": [{"speaker": "A", "text": "new"}, '
                   '{"speaker": "B"}]}}]')
    with pytest.raises(TranscriptError):
        engine.ingest(load_transcripts(bad)[0].messages)
    assert (engine.segments("t"), engine.decisions("t")) == snapshot


def test_other_embedder_on_existing_store_is_a_clear_error(engine_factory, tmp_path):
    path = tmp_path / "q"
    engine = _engine(engine_factory, path)
    engine.ingest(make_messages(TEXTS))
    engine.close()
    other = engine_factory(embedder=HashEmbedder(dim=32, name="other"), store=MemoryStore(path=path))
    with pytest.raises(EmbedderError, match="re-embed"):
        other.ingest(make_messages(TEXTS))


def test_second_process_on_same_folder_gets_a_clear_message(tmp_path):
    path = tmp_path / "q"
    store = MemoryStore(path=path)
    code = "import sys; from memsif.store import MemoryStore; MemoryStore(path=sys.argv[1])"
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert out.returncode != 0 and "in use by another MemSIF process" in out.stderr
    store.close()


def test_reembed_rebuilds_a_store_of_another_embedder_into_a_new_folder(tmp_path, monkeypatch):
    import memsif.cli as cli
    from memsif.config import MemSIFConfig
    from memsif.engine import MemSIF
    from tests.fakes import TableEntities

    old = MemSIF(MemSIFConfig(data_dir=str(tmp_path / "old"), core_facts=False),
                 llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5}), embedder=HashEmbedder(),
                 entities=TableEntities())
    old.ingest(make_messages(TEXTS), namespace="alice")
    old.close()
    with pytest.raises(EmbedderError, match="python -m memsif reembed --from"):
        MemSIF(MemSIFConfig(data_dir=str(tmp_path / "old")), llm=FakeLLM(),
               embedder=HashEmbedder(dim=32, name="other"), entities=TableEntities()).ingest(make_messages(TEXTS))

    made = []

    def new_engine(args, **overrides):
        made.append(MemSIF(MemSIFConfig(data_dir=args.data_dir, core_facts=False),
                           llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5}),
                           embedder=HashEmbedder(dim=32, name="other"), entities=TableEntities()))
        return made[-1]

    monkeypatch.setattr(cli, "_engine", new_engine)
    assert cli.main(["reembed", "--from", str(tmp_path / "old"), "--data-dir", str(tmp_path / "new"),
                     "--no-progress"]) == 0
    fresh = MemSIF(MemSIFConfig(data_dir=str(tmp_path / "new")), llm=FakeLLM(),
                   embedder=HashEmbedder(dim=32, name="other"), entities=TableEntities())
    assert [m.text for m in fresh.messages("alice")] == TEXTS
    assert fresh.segments("alice") and fresh.store.dim == 32


def test_a_deleted_namespace_is_gone_from_search_views_and_disk_after_a_restart(tmp_path):
    from memsif.config import MemSIFConfig
    from memsif.engine import MemSIF
    from tests.fakes import TableEntities

    def engine():
        return MemSIF(MemSIFConfig(data_dir=str(tmp_path), core_facts=False),
                      llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5}), embedder=HashEmbedder(),
                      entities=TableEntities())

    first = engine()
    first.ingest(make_messages(["my secret word is xylophonequartz", "we talked about tomatoes"], "a"), namespace="a")
    first.ingest(make_messages(["bob likes chess"], "b"), namespace="b")
    first.delete_namespace("a")
    assert first.namespaces() == ["b"]
    assert first.store.search_messages("a", first.embedder.embed_query("secret word"), 5) == []
    with pytest.raises(NotFoundError):
        first.segments("a")
    first.close()

    again = engine()
    assert again.namespaces() == ["b"] and not again.has_memory("a")
    from typing import get_args

    from memsif.store import RecordKind
    for kind in get_args(RecordKind):
        assert again.store.count(kind, "a") == 0, f"{kind} records of the deleted namespace are still stored"
    assert again.store.count("decision", "b") > 0, "the other namespace must stay"
    again.close()
    on_disk = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert b"xylophonequartz" not in on_disk, "the deleted text is still in the data folder"


def test_another_transcript_with_the_same_ids_is_refused_not_silently_skipped(engine_factory):
    from memsif.errors import MemSIFError

    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5}))
    engine.ingest(make_messages(["I planted tomatoes.", "Slugs ate them."]), namespace="s")
    before = [m.text for m in engine.messages("s")]
    with pytest.raises(MemSIFError, match="already holds 2 of these messages with other content: D1:1 text"):
        engine.ingest(make_messages(["Mia flies to Oslo.", "Her bike is red."]), namespace="s")
    assert [m.text for m in engine.messages("s")] == before
    assert engine.ingest(make_messages(["I planted tomatoes.", "Slugs ate them."]), namespace="s").messages == 0


# ------------------------------------------------------ class: damaged, read-only or vanishing stores
def _built(engine_factory, path):
    engine = _engine(engine_factory, path)
    engine.ingest(make_messages(TEXTS))
    engine.close()


def _damage_meta(path):
    (path / "meta.json").write_text("{garbage")


def _damage_meta_layout(path):
    (path / "meta.json").write_text('{"aliases": {}}')


def _damage_sqlite(path):
    (path / "collection" / "memsif_messages" / "storage.sqlite").write_bytes(b"not a database" * 64)


def _lose_collection(path):
    import shutil

    shutil.rmtree(path / "collection" / "memsif_facts")


@pytest.mark.parametrize(("damage", "said"), [
    (_damage_meta, "meta.json is not a Qdrant index (JSONDecodeError"),
    (_damage_meta_layout, "meta.json is not a Qdrant index (KeyError"),
    (_damage_sqlite, "collection/memsif_messages/storage.sqlite is not an SQLite database"),
    (_lose_collection, "collection memsif_facts is listed in meta.json but its storage"),
])
def test_a_damaged_store_is_a_store_error_naming_the_folder_and_nothing_changes(engine_factory, tmp_path, damage,
                                                                                said, capsys):
    from memsif.cli import main
    from memsif.errors import StoreError

    path = tmp_path / "data" / "qdrant"
    _built(engine_factory, path)
    damage(path)
    before = {p: p.read_bytes() for p in path.rglob("*") if p.is_file() and p.name != ".lock"}
    with pytest.raises(StoreError) as info:
        MemoryStore(path=path)
    assert said in str(info.value) and str(path) in str(info.value) and "Nothing was changed" in str(info.value)
    assert main(["show", "--namespace", "t", "--data-dir", str(tmp_path / "data")]) != 0
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert {p: p.read_bytes() for p in path.rglob("*") if p.is_file() and p.name != ".lock"} == before


def test_a_read_only_folder_can_be_read_and_refuses_writes_by_name(engine_factory, tmp_path, monkeypatch):
    from memsif.errors import StoreError
    from memsif.store import connection

    path = tmp_path / "q"
    _built(engine_factory, path)
    before = {p: p.read_bytes() for p in path.rglob("*") if p.is_file() and p.name != ".lock"}
    monkeypatch.setattr(connection, "writable", lambda folder: False)  # a read-only mount, as root sees one
    engine = _engine(engine_factory, path)
    assert engine.store.read_only and [m.text for m in engine.messages("t")] == TEXTS
    assert engine.ask("What is Max?", namespace="t").evidence_used, "questions work on a read-only memory"
    with pytest.raises(StoreError, match=f"The memory folder {path} is read-only: it can be read, not changed"):
        engine.ingest(make_messages(["A new message."], namespace="other"))
    engine.close()
    assert {p: p.read_bytes() for p in path.rglob("*") if p.is_file() and p.name != ".lock"} == before


def test_a_question_that_loses_the_race_with_a_delete_is_told_the_memory_was_deleted(engine_factory):
    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.7, "answer": "Max."}))
    engine.ingest(make_messages(TEXTS))
    store = engine.store
    search = store.hybrid_search

    def deleted_meanwhile(*args, **kwargs):
        engine.delete_namespace("t")  # another session deletes the memory mid-question
        return search(*args, **kwargs)

    store.hybrid_search = deleted_meanwhile
    with pytest.raises(NotFoundError, match="was deleted while this question was being answered") as info:
        engine.ask("What is Max?", namespace="t")
    assert "upgrade" not in str(info.value)


def test_a_store_built_with_the_configured_embedder_is_read_without_loading_it(tmp_path, monkeypatch):
    """Reads (segments, an export) of a folder built with the configured embedder open the store by its
    record and never load the embedder; the first step that embeds loads it and checks it against the
    record; a folder recorded with another embedder is refused as before."""
    import memsif.embed
    from memsif.config import MemSIFConfig
    from memsif.engine import MemSIF
    from tests.fakes import TableEntities

    path = tmp_path / "q"
    built = MemSIF(MemSIFConfig(data_dir=str(tmp_path), core_facts=False, embedder_model="hash-test"),
                   llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5}),
                   embedder=HashEmbedder(name="hash-test"), entities=TableEntities(), store=MemoryStore(path=path))
    built.ingest(make_messages(TEXTS), namespace="alice")
    segments = built.segments("alice")
    built.close()
    loaded = []

    class Loader:  # stands in for the sentence-transformers model the configuration names
        def __init__(self, model, dim=32):
            loaded.append(model)
            self.name, self.dim = model, dim

    monkeypatch.setattr(memsif.embed, "SentenceTransformerEmbedder", Loader)

    def reopen(model):
        return MemSIF(MemSIFConfig(data_dir=str(tmp_path), core_facts=False, embedder_model=model),
                      llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5}), entities=TableEntities(),
                      store=MemoryStore(path=path))

    reader = reopen("hash-test")
    assert reader.segments("alice") == segments
    export = reader.export_namespace("alice")
    assert (export.embedder, export.dim) == ("hash-test", HashEmbedder().dim) and loaded == []
    with pytest.raises(EmbedderError, match="re-embed"):  # embedding loads it: 32 dimensions, not the record's
        reader.ingest(make_messages(["One more message."]), namespace="bob")
    assert loaded == ["hash-test"] and reader.segments("alice") == segments
    reader.close()
    other = reopen("another-model")
    with pytest.raises(EmbedderError, match="re-embed"):
        other.segments("alice")
    assert loaded == ["hash-test", "another-model"]
    other.close()


def test_a_read_beside_a_writer_survives_a_journal_or_file_that_vanishes_while_it_is_copied(engine_factory, tmp_path,
                                                                                            monkeypatch):
    """A read-only snapshot lists the folder, then copies each file: SQLite's journal of a write under way
    (``storage.sqlite-journal``) is never copied (the backup reads the database consistently), and a file
    that vanishes between the two makes the copy start again; one that keeps vanishing is a StoreError that
    says a build is writing, not a traceback."""
    import shutil

    from memsif.errors import StoreError
    from memsif.store import connection

    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5}),
                            store=MemoryStore(path=tmp_path / "d" / "qdrant"))
    engine.ingest(make_messages(["I adopted a beagle named Max."], namespace="alice"), namespace="alice")
    engine.close()
    folder = tmp_path / "d" / "qdrant"
    database = next(folder.rglob("storage.sqlite"))
    journal = database.with_name("storage.sqlite-journal")
    journal.write_bytes(b"")  # left by a write under way; gone by the time it is copied
    copied = []
    real = shutil.copy2

    def vanishing(src, dst, *a, **k):
        copied.append(str(src))
        if str(src).endswith("-journal"):
            raise FileNotFoundError(2, "No such file or directory", str(src))
        if str(src).endswith("meta.json") and copied.count(str(src)) == 1:  # replaced by the writer once
            raise FileNotFoundError(2, "No such file or directory", str(src))
        return real(src, dst, *a, **k)

    monkeypatch.setattr(connection.shutil, "copy2", vanishing)
    reader = MemoryStore(path=folder, when_busy="read")
    assert reader.count("message", "alice") == 1
    reader.close()
    assert not any(c.endswith("-journal") for c in copied) and copied.count(str(folder / "meta.json")) == 2

    monkeypatch.setattr(connection.shutil, "copy2", lambda src, *a, **k: (_ for _ in ()).throw(
        FileNotFoundError(2, "No such file or directory", str(src))))
    with pytest.raises(StoreError, match=r"changed while it was copied to be read \(3 tries.*a build is writing"):
        MemoryStore(path=folder, when_busy="read")
