"""Inspector figures are built from stored decisions."""

import pytest

from memsif.viz import phi_timeline, segment_rows
from tests.conftest import make_messages
from tests.fakes import FakeLLM, FixedEmbedder

VECTORS = {"same": [1.0, 0.0], "same again": [1.0, 0.0], "opposite": [-1.0, 0.0], "orthogonal": [0.0, 1.0]}


def test_timeline_has_one_trace_per_outcome_and_threshold_lines(engine_factory):
    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.2}), embedder=FixedEmbedder(VECTORS),
                            alpha_segment=1.0, sem_mapping="affine", trajectory_min_phi=1.0)
    engine.ingest(make_messages(["same", "same again", "opposite", "orthogonal"]))
    decisions = engine.decisions("t", "segment")
    fig = phi_timeline(decisions, engine.messages("t"), 0.325, 0.6)
    names = {trace.name for trace in fig.data}
    assert names == {"merged by rule", "split by rule", "judge: split"}
    assert sum(len(trace.x) for trace in fig.data) == 3  # the first message has no φ
    lines = [shape.y0 for shape in fig.layout.shapes if shape.type == "line" and shape.y0 == shape.y1]
    assert sorted(lines) == [0.325, 0.6]
    rows = segment_rows(engine.segments("t"), decisions)
    assert [r[0] for r in rows] == ["S1", "S2", "S3"]
    assert rows[2][6].startswith("judge φ=0.500 P=0.20")


def test_trajectory_and_cluster_figures(engine_factory):
    from memsif.records import CandidateCluster
    from memsif.viz import cluster_scatter, fact_rows, op_rows, trajectory_decisions_plot, trajectory_graph

    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.2, "trajectory_judge": 0.9}),
                            embedder=FixedEmbedder(VECTORS), alpha_segment=1.0, sem_mapping="affine",
                            alpha_trajectory=1.0, trajectory_min_phi=0.0, trajectory_link="model")
    engine.ingest(make_messages(["same", "opposite", "same again"]))
    segments, trajectories = engine.segments("t"), engine.trajectories("t")
    index = {m.id: m.index for m in engine.messages("t")}
    graph = trajectory_graph(segments, trajectories, index)
    nodes = graph.data[1]
    assert list(nodes.text) == [s.id for s in segments]
    assert list(nodes.x) == [index[s.message_ids[0]] for s in segments]  # time order
    edges = [x for x in graph.data[0].x if x is not None]
    assert len(edges) == 2 * sum(len(t.segment_ids) - 1 for t in trajectories)
    why = trajectory_decisions_plot(engine.decisions("t"), segments, index, 0.5)
    names = {t.name.rsplit(" (", 1)[0]: len(t.x) for t in why.data}
    # S3 joined S1's E1; "opposite" (φ 0) is at the floor against S1 and, for S3, against S2
    assert names == {"joined this trajectory": 1, "opened a new trajectory": 2,
                     "φ at or below the judge's floor: not asked": 2}, names
    joined = next(t for t in why.data if t.name.startswith("joined"))
    assert list(joined.x) == [index[segments[2].message_ids[0]]] and "S3 → E1 via S1" in joined.hovertext[0]
    assert list(joined.y) == pytest.approx([0.9]) and "P(same thread) 0.90" in joined.hovertext[0]
    assert "1 of 3 joined one, 2 opened one" in why.layout.title.text
    clusters = [CandidateCluster(id="C1", subject="mel", score_src=0.5, score_qry=0.6, sources=["a", "b"],
                                 queries=["q1", "q2"], statements=["s"], active_fact_id="A1"),
                CandidateCluster(id="C2", subject="car", score_src=0.0, score_qry=0.0, sources=["a"],
                                 queries=["q"], statements=["s"], active_fact_id=None)]
    fig = cluster_scatter(clusters, 0.45, 0.45)
    assert [len(t.x) for t in fig.data] == [1, 1] and fig.data[1].name == "promoted to ActiveFact"
    assert fact_rows([]) == [] and op_rows([]) == []


def test_message_index_axes_tick_in_whole_steps():
    from memsif.viz import index_tick

    assert [index_tick(n) for n in (1, 4, 14, 25, 419)] == [1, 1, 1, 2, 42]


def test_the_trajectory_graph_stays_readable_at_150_segments():
    from types import SimpleNamespace

    from memsif.viz import trajectory_graph

    segments = [SimpleNamespace(id=f"S{k}", message_ids=[f"D1:{k}"], trajectory_id=f"E{k % 7 if k < 60 else k}")
                for k in range(1, 168)]
    trajectories = [SimpleNamespace(id=f"E{j}", segment_ids=[s.id for s in segments if s.trajectory_id == f"E{j}"])
                    for j in sorted({int(s.trajectory_id[1:]) for s in segments})]
    fig = trajectory_graph(segments, trajectories, {f"D1:{k}": k for k in range(1, 168)})
    assert fig.data[1].mode == "markers"  # no labels on 167 nodes
    rows = list(fig.layout.yaxis.ticktext)
    assert rows[0] == "single-segment" and len(rows) == 8  # 7 multi-segment trajectories + one shared row
    assert "7 link two or more of the 167 segments" in fig.layout.title.text


def test_the_trace_says_why_facts_and_evidence_came_in():
    from memsif.query import Answer
    from memsif.records import Evidence, RetrievedFact
    from memsif.viz import trace_markdown

    answer = Answer(question="What activities does Ann do?", answer="camping", sufficient=False,
                    sufficiency_prob=None, traced_back=True, aggregation=True,
                    aggregation_rule="asks for several things about Ann: up to 16 of their facts join the context",
                    facts_used=[RetrievedFact(kind="core", id="F3", subject="Ann", type="Event",
                                              statement="Ann went camping.", source_message_ids=["D1:1"],
                                              score=0.5, found_by="subject")],
                    evidence_used=[Evidence(statement="We went camping.", subject="Ann", source_message_ids=["D1:1"],
                                            found_by=["dense", "fact"], scores={"dense": 0.5, "fused": 0.03})])
    _, body = trace_markdown(answer)
    assert "a fact of the speaker asked about" in body
    assert "_Question: asks for several things about Ann" in body
    assert "a fact's source" in body


def test_an_older_trajectory_log_is_not_drawn_against_todays_threshold():
    from memsif.records import PhiScore, TopicalSegment, TrajectoryCandidate, TrajectoryDecision
    from memsif.viz import trajectory_decisions_plot

    segments = [TopicalSegment(id=f"S{i}", namespace="t", index=i - 1, message_ids=[f"D1:{i}"]) for i in (1, 2)]
    old = TrajectoryCandidate(trajectory_id="E1", score=PhiScore(phi=0.7, s_sem=0.7, jaccard=0.0, cosine=0.4),
                              judge_prob=0.45, compatible=False)
    decisions = [TrajectoryDecision(namespace="t", segment_id="S2", candidates=[old], trajectory_id="E2", created=True)]
    fig = trajectory_decisions_plot(decisions, segments, {"D1:1": 0, "D1:2": 1}, 0.25)
    assert not fig.layout.shapes and "older log" in fig.layout.yaxis.title.text
    linked = [TrajectoryDecision(namespace="t", segment_id="S2", trajectory_id="E2", created=True,
                                 candidates=[old.model_copy(update={"link_prob": 0.1})])]
    fig = trajectory_decisions_plot(linked, segments, {"D1:1": 0, "D1:2": 1}, 0.25)
    assert fig.layout.shapes[0].y0 == 0.25 and fig.layout.yaxis.title.text == "P(same thread)"
