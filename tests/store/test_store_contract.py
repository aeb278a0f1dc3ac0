"""The store contract (``memsif.store.base.Store``), run on each way ``MemoryStore`` connects:
``:memory:``, an embedded folder (``path=``), and a Qdrant server (``url=``) when
``MEMSIF_TEST_QDRANT_URL`` names one. Each test makes the same calls on every connection; the last
one also checks that the three give the same answers (qdrant-client's congruence tests)."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import datetime

import pytest

from memsif import lexical
from memsif.records import (
    ActiveFact,
    BoundaryRule,
    CandidateCluster,
    CoreFact,
    EventTrajectory,
    FactOp,
    FactOperation,
    Message,
    SegmentDecision,
    Sentence,
    TopicalSegment,
    TrajectoryDecision,
)
from memsif.store import MemoryStore, SentenceQuery, Store, StoredMessage
from tests.fakes import HashEmbedder

CONNECTIONS = ["memory", "path", *(["url"] if os.environ.get("MEMSIF_TEST_QDRANT_URL") else [])]
EMB = HashEmbedder()
WHEN = datetime(2024, 3, 3, 10, 0)
TEXTS = [("Ana", "I adopted a beagle named Max."), ("Ben", "Max sounds lovely! I went hiking in the Alps."),
         ("Ana", "The stock market fell today."), ("Ben", "Bonds and stocks are down too.")]


def _open(kind: str, tmp_path, namespace_suffix: str = "") -> MemoryStore:
    if kind == "memory":
        store = MemoryStore(in_memory=True)
    elif kind == "path":
        store = MemoryStore(path=tmp_path / "qdrant")
    else:
        store = MemoryStore(url=os.environ["MEMSIF_TEST_QDRANT_URL"])
    store.ensure_collections(EMB.name, EMB.dim)
    return store


@pytest.fixture(params=CONNECTIONS)
def store(request, tmp_path):
    store = _open(request.param, tmp_path)
    namespaces = ("contract-a", "contract-b")
    for ns in namespaces:  # a server keeps what an earlier run left
        store.delete_namespace(ns)
    yield store
    for ns in namespaces:
        store.delete_namespace(ns)
    store.close()


def _fill(store: Store, ns: str) -> None:
    """Every kind of record, written through the contract."""
    vectors = EMB.embed_documents([t for _, t in TEXTS])
    messages = [Message(id=f"D1:{k + 1}", namespace=ns, speaker=s, text=t, time=WHEN, index=k)
                for k, (s, t) in enumerate(TEXTS)]
    store.put_messages(ns, [StoredMessage(m, v, frozenset({"max"}) if k < 2 else frozenset(), "S1" if k < 2 else "S2")
                            for k, (m, v) in enumerate(zip(messages, vectors, strict=True))])
    sentences = [Sentence(id=f"{m.id}#0", namespace=ns, message_id=m.id, position=0, text=m.text, speaker=m.speaker,
                          message_index=m.index, time=WHEN, segment_id="S1" if m.index < 2 else "S2")
                 for m in messages]
    store.put_sentences(ns, [(s, v, lexical.encode_document(s.text, s.speaker))
                             for s, v in zip(sentences, vectors, strict=True)])
    store.put_segments(ns, [(TopicalSegment(id="S1", namespace=ns, index=0, message_ids=["D1:1", "D1:2"]),
                             vectors[0]),
                            (TopicalSegment(id="S2", namespace=ns, index=1, message_ids=["D1:3", "D1:4"]),
                             vectors[2])])
    store.put_trajectories(ns, [(EventTrajectory(id="E1", namespace=ns, index=0, segment_ids=["S1", "S2"]),
                                 vectors[0])])
    store.set_sentence_trajectories(ns, {"S1": "E1", "S2": "E1"})
    decisions = [SegmentDecision(namespace=ns, message_id="D1:2", message_index=1, segment_id="S1", tau_split=0.3,
                                 tau_merge=0.6, rule=BoundaryRule.MERGE, continued=True),
                 TrajectoryDecision(namespace=ns, segment_id="S2", trajectory_id="E1", created=False)]
    assert store.put_decisions(ns, decisions, 0) == 2
    facts = [CoreFact(id="F1", namespace=ns, subject="Ana", type="Event", statement="Ana adopted a beagle named Max."),
             CoreFact(id="F2", namespace=ns, subject="Ben", type="Event", statement="Ben went hiking in the Alps."),
             CoreFact(id="F3", namespace=ns, subject="Ana", type="Event", statement="Ana adopted a cat.",
                      status="superseded")]
    store.put_facts(ns, [(f, EMB.embed_documents([f.statement])[0]) for f in facts])
    assert store.put_fact_ops(ns, [FactOperation(namespace=ns, op=FactOp.ADD, fact_ids=["F1"], reason="new",
                                                 decided_by="rule", recorded_at=WHEN)], 0) == 1
    store.put_clusters(ns, [CandidateCluster(id="C1", namespace=ns, subject="ana")])
    store.put_active_facts(ns, [(ActiveFact(id="A1", namespace=ns, subject="ana: max", statement="Ana has a dog, Max.",
                                            cluster_id="C1", score_src=0.5, score_qry=0.5, promoted_at=WHEN,
                                            updated_at=WHEN), EMB.embed_documents(["Ana has a dog, Max."])[0])])


def test_every_record_comes_back_as_written_in_record_order(store):
    _fill(store, "contract-a")
    ns = "contract-a"
    assert isinstance(store, Store)
    assert [r.message.id for r in store.messages(ns)] == ["D1:1", "D1:2", "D1:3", "D1:4"]
    first = store.messages(ns)[0]
    assert first.entities == frozenset({"max"}) and first.segment_id == "S1" and first.vector.shape == (EMB.dim,)
    assert [s.id for s, _ in store.sentences(ns)] == ["D1:1#0", "D1:2#0", "D1:3#0", "D1:4#0"]
    assert {s.trajectory_id for s, _ in store.sentences(ns)} == {"E1"}
    assert set(store.sentence_lexical(ns)) == {"D1:1#0", "D1:2#0", "D1:3#0", "D1:4#0"}
    assert [s.id for s in store.segments(ns)] == ["S1", "S2"]
    assert [t.segment_ids for t in store.trajectories(ns)] == [["S1", "S2"]]
    assert [d.seq for d in store.decisions(ns)] == [0, 1]
    assert [type(d).__name__ for d in store.decisions(ns, "trajectory")] == ["TrajectoryDecision"]
    assert [f.id for f, _ in store.facts(ns)] == ["F1", "F2", "F3"]
    assert [op.fact_ids for op in store.fact_ops(ns)] == [["F1"]]
    assert [c.id for c in store.clusters(ns)] == ["C1"]
    assert [a.id for a in store.active_facts(ns)] == ["A1"]
    assert sorted(store.speakers(ns)) == ["Ana", "Ben"]
    assert {k: store.count(k, ns) for k in ("message", "sentence", "segment", "fact", "decision")} == \
        {"message": 4, "sentence": 4, "segment": 2, "fact": 3, "decision": 2}


def test_namespaces_are_apart_and_deleting_one_leaves_the_other(store):
    _fill(store, "contract-a")
    _fill(store, "contract-b")
    assert {"contract-a", "contract-b"} <= set(store.namespaces())
    store.delete("fact", "contract-a", ["F2"])
    assert [f.id for f, _ in store.facts("contract-a")] == ["F1", "F3"]
    assert len(store.facts("contract-b")) == 3
    store.delete_namespace("contract-a")
    assert store.count("message", "contract-a") == 0 and store.count("sentence", "contract-a") == 0
    assert store.segments("contract-a") == [] and store.hybrid_search("contract-a", SentenceQuery(
        EMB.embed_query("Max"), lexical.encode_query("Max")), 5) == []
    assert len(store.messages("contract-b")) == 4 and "contract-a" not in store.namespaces()


def test_a_record_written_twice_is_one_record(store):
    _fill(store, "contract-a")
    _fill(store, "contract-a")
    assert store.count("message", "contract-a") == 4 and len(store.facts("contract-a")) == 3


def test_searches_rank_by_the_query_and_keep_to_their_filters(store):
    _fill(store, "contract-a")
    ns = "contract-a"
    qv = EMB.embed_query("Ana adopted a beagle named Max.")
    facts = store.search_facts(ns, qv, 5)
    assert facts[0][0].id == "F1" and "F3" not in {f.id for f, _ in facts}, "only current CoreFacts"
    assert [f.id for f, _ in store.search_facts(ns, qv, 5, subject=["Ben"])] == ["F2"]
    assert store.search_active_facts(ns, qv, 3)[0][0].id == "A1"
    assert store.search_messages(ns, qv, 1)[0][0].id == "D1:1"
    hits = store.hybrid_search(
        ns, SentenceQuery(EMB.embed_query("stock market"), lexical.encode_query("stock market")), 4)
    assert hits[0].sentence.message_id == "D1:3" and hits[0].fused >= hits[-1].fused
    assert hits[0].found_by == ["dense", "lexical"]
    stocks = SentenceQuery(EMB.embed_query("stocks"), lexical.encode_query("stocks"))
    only_s1 = store.hybrid_search(ns, replace(stocks, within={"segment_id": ["S1"]}), 4)
    assert {h.sentence.segment_id for h in only_s1} == {"S1"}
    without = store.hybrid_search(ns, replace(stocks, excluded={"segment_id": ["S2"]}), 4)
    assert "S2" not in {h.sentence.segment_id for h in without}
    boosted = store.hybrid_search(ns, SentenceQuery(EMB.embed_query("Max"), lexical.encode_query("Max"),
                                                    speakers=["Ben"], speaker_boost=5.0), 4)
    assert boosted[0].sentence.speaker == "Ben"


def _answers(store: Store) -> dict:
    """What the contract's reads and searches give on the filled memory, comparable across stores."""
    ns = "contract-a"
    qv = EMB.embed_query("Max the beagle")
    return {
        "messages": [(r.message.id, sorted(r.entities), r.segment_id) for r in store.messages(ns)],
        "sentences": [(s.id, s.trajectory_id) for s, _ in store.sentences(ns)],
        "segments": [s.model_dump(mode="json") for s in store.segments(ns)],
        "decisions": [d.model_dump(mode="json") for d in store.decisions(ns)],
        "facts": [f.model_dump(mode="json") for f, _ in store.facts(ns)],
        "search_facts": [(f.id, round(score, 4)) for f, score in store.search_facts(ns, qv, 3)],
        "hybrid": [(h.sentence.id, round(h.fused, 4)) for h in
                   store.hybrid_search(ns, SentenceQuery(qv, lexical.encode_query("Max the beagle")), 4)],
    }


def test_every_connection_gives_the_same_answers(tmp_path):
    answers = {}
    for kind in CONNECTIONS:
        store = _open(kind, tmp_path / kind)
        store.delete_namespace("contract-a")
        _fill(store, "contract-a")
        answers[kind] = _answers(store)
        store.delete_namespace("contract-a")
        store.close()
    for kind in CONNECTIONS[1:]:
        assert answers[kind] == answers["memory"], f"{kind} differs from :memory:"
