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
    assert rows[2][7].startswith("judge φ=0.500 P=0.20")


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
    legend = {t.name for t in why.data}  # a point is a candidate pair; the title counts segments
    assert {"joined this trajectory (1 candidate pair)", "opened a new trajectory (2 segments)"} <= legend, legend
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

    segments = [SimpleNamespace(id=f"S{k}", message_ids=[f"D1:{k}"], trajectory_id=f"E{k % 7 if k < 60 else k}",
                                title=None)
                for k in range(1, 168)]
    trajectories = [SimpleNamespace(id=f"E{j}", segment_ids=[s.id for s in segments if s.trajectory_id == f"E{j}"])
                    for j in sorted({int(s.trajectory_id[1:]) for s in segments})]
    fig = trajectory_graph(segments, trajectories, {f"D1:{k}": k for k in range(1, 168)})
    assert fig.data[1].mode == "markers"  # no labels on 167 nodes
    rows = list(fig.layout.yaxis.ticktext)
    assert rows[0] == "single-segment" and len(rows) == 8  # 7 multi-segment trajectories + one shared row
    assert "7 link two or more of the 167 segments" in fig.layout.title.text


def test_the_trace_says_why_facts_and_evidence_came_in():
    from memsif.answer.query import Answer
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


#: Markup a transcript may bring: a tag with a script, emphasis, a link to a script, a style sheet.
IMG = '<img src=x onerror="window.__pwned=1">'
MARKUP = [f"I planted tomatoes {IMG} today.", "<b>bold</b> [link](javascript:alert(1)) <style>body{}</style>"]


def _rendered_tags(text: str) -> list[str]:
    """Tags in ``text`` other than the few a figure or a message writes itself."""
    import re

    return [t for t in re.findall(r"</?[a-z]+[^>]*>", text) if t not in ("<br>", "<b>", "</b>")]


def test_what_a_transcript_brings_is_escaped_in_every_figure_and_markdown_view(engine_factory):
    """Hover and tick text (plotly renders a subset of HTML there) and the chat's Markdown hold the
    escaped form of message text, speaker names, fact statements and questions: the literal text is
    shown, no tag, link or emphasis is made. Table rows keep it as written (Gradio shows a str cell as
    text)."""
    from memsif.answer.query import Answer
    from memsif.records import CandidateCluster, Evidence, RetrievedFact
    from memsif.viz import (
        LensRow,
        answer_markdown,
        cluster_scatter,
        evidence_lens,
        message_rows,
        trace_markdown,
        trajectory_detail_rows,
        trajectory_graph,
    )

    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.2, "trajectory_judge": 0.9}))
    messages = make_messages(["Tomatoes first.", *MARKUP], speaker="<b>Bo</b>")  # the first has no φ
    engine.ingest(messages)
    stored, segments = engine.messages("t"), engine.segments("t")
    hover = " ".join(h for trace in phi_timeline(engine.decisions("t", "segment"), stored, 0.3, 0.6).data
                     for h in trace.hovertext)
    assert "&lt;img src=x onerror=" in hover and "&lt;b&gt;Bo&lt;/b&gt;" in hover and "&lt;style&gt;" in hover
    assert not _rendered_tags(hover) and "<b>Bo" not in hover and "<b>bold" not in hover, hover

    odd = [s.model_copy(update={"message_ids": ["<i>D1:1</i>"]}) for s in segments[:1]]
    graph = trajectory_graph(odd, engine.trajectories("t"))
    assert "&lt;i&gt;D1:1&lt;/i&gt;" in graph.data[1].hovertext[0] and "<i>" not in graph.data[1].hovertext[0]

    cluster = CandidateCluster(id="C1", subject="<b>Bo</b>: tomatoes", score_src=0.5, score_qry=0.5, sources=["a"],
                               queries=["q"], statements=[MARKUP[0]])
    [scatter] = [t for t in cluster_scatter([cluster], 0.45, 0.45).data if len(t.x)]
    assert "&lt;b&gt;Bo&lt;/b&gt;" in scatter.hovertext[0] and "&lt;img" in scatter.hovertext[0]
    assert not _rendered_tags(scatter.hovertext[0]) and "<b>Bo" not in scatter.hovertext[0]

    row = LensRow(question=f"Did Bo say <b>bold</b> {IMG}?", category="multi-hop", ted=0.5, gold=["D1:1", "D1:2"],
                  gold_index=[0, 1], found={"Hybrid RAG": ["D1:1"]}, how={"D1:1": "search (S1)"}, recall={})
    lens = evidence_lens([row])
    ticks = lens.layout.yaxis.categoryarray
    texts = " ".join(t for trace in lens.data if trace.text for t in trace.text)
    for shown in (*ticks, texts):
        assert "&lt;b&gt;bold&lt;/b&gt;" in shown and not _rendered_tags(shown) and "<b>bold" not in shown, shown

    evidence = Evidence(statement=MARKUP[1], subject="<b>Bo</b>", source_message_ids=["D1:2"], found_by=["dense"],
                        scores={"dense": 0.5, "priority": 1.0})
    fact = RetrievedFact(kind="core", id="F1", subject="<b>Bo</b>", type="Event", statement=MARKUP[0],
                         source_message_ids=["D1:1"], score=0.5)
    answer = Answer(question="q", answer=f"Tomatoes <b>bold</b> {IMG}\n- [link](javascript:alert(1))",
                    sufficient=False, sufficiency_prob=None, traced_back=True, facts_used=[fact],
                    evidence_used=[evidence], unsupported_mentions=["<b>Ann</b>"],
                    errors=["LLMOutputError: the model wrote <script>x</script>"])
    _, body = trace_markdown(answer)
    for markdown in (answer_markdown(answer), body):
        assert "&lt;img src=x onerror=" in markdown and "&lt;b&gt;Bo&lt;/b&gt;" in markdown, markdown
        assert not _rendered_tags(markdown) and "<b>" not in markdown, markdown
        assert "\\[link\\](javascript:alert(1))" in markdown and "[link](" not in markdown.replace("\\[link\\](", "")
    assert "&lt;script&gt;" in body and "&lt;b&gt;Ann&lt;/b&gt;" in body
    assert answer_markdown(answer).splitlines()[1] == "\\- \\[link\\](javascript:alert(1))"  # no list, no link

    assert message_rows(["D1:2"], stored)[0][3:] == ["<b>Bo</b>", MARKUP[0]]  # a table's str cells show it as is
    shown = [r[-1] for t in engine.trajectories("t")
             for r in trajectory_detail_rows(t.id, segments, engine.trajectories("t"), stored)]
    assert MARKUP[0] in shown and MARKUP[1] in shown


@pytest.mark.parametrize("said", ["I don't know.", "Her age is not mentioned.", "There is no information about that.",
                                  "The memory doesn’t say.", "It cannot be determined from this."])
def test_an_answer_that_found_nothing_lists_no_supporting_messages(said):
    """"I don't know" is not an answer with support: the nearest messages stay in the trace. A reply of
    the relevance floor names no model (none was asked). An answer lists its supporting messages."""
    from memsif.answer.query import NOTHING_RELEVANT, Answer
    from memsif.records import Evidence
    from memsif.viz import answer_markdown

    unrelated = Evidence(statement="I planted tomatoes.", subject="Ana", source_message_ids=["D1:1"],
                         scores={"priority": 1.0})
    base = {"question": "How old is Ana?", "sufficient": False, "sufficiency_prob": None, "traced_back": True,
            "evidence_used": [unrelated], "model": "Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, packaged)"}
    declined = answer_markdown(Answer(answer=said, **base))
    assert "Best supporting messages" not in declined and "D1:1" not in declined, declined
    assert "found no answer in the memory it was given" in declined and "Answered by Qwen" in declined
    floor = answer_markdown(Answer(answer=NOTHING_RELEVANT, nothing_relevant=True, **base))
    assert "Answered by" not in floor and "No model was asked" in floor and "D1:1" not in floor, floor
    answered = answer_markdown(Answer(answer="She is 30.", **base))
    assert "Best supporting messages" in answered and "D1:1" in answered and "found no answer" not in answered


def test_a_statement_drawn_from_a_dated_message_carries_its_day_once():
    from datetime import datetime

    from memsif.timeparse import dated

    day = datetime(2023, 7, 21)
    assert dated("Melanie ran a charity race (21 July 2023)", day) == "Melanie ran a charity race (21 July 2023)"
    assert dated("Melanie ran a charity race", day) == "Melanie ran a charity race (21 July 2023)"
    assert dated("Melanie ran a charity race", None) == "Melanie ran a charity race"


def test_an_id_holding_backticks_or_markup_is_one_code_span():
    """An id comes from the file (a JSONL ``id``, a fact's id): shown as one code span whatever it
    holds, fenced by more backticks than it has in a row, so that its backticks and tags stay text."""
    from memsif.answer.query import Answer
    from memsif.markdown import code_span
    from memsif.records import Evidence, RetrievedFact
    from memsif.viz import answer_markdown, trace_markdown

    assert code_span("D`1") == "`` D`1 ``" and code_span("a``b") == "``` a``b ```" and code_span("D1:1") == "`D1:1`"
    evidence = Evidence(statement="Tomatoes.", subject="Bo", source_message_ids=["D`1", "<b>D2</b>"],
                        found_by=["dense"], scores={"dense": 0.5, "priority": 1.0})
    fact = RetrievedFact(kind="core", id="F`1", subject="Bo", type="Event", statement="Tomatoes.",
                         source_message_ids=["D`1"], score=0.5)
    answer = Answer(question="q", answer="Tomatoes.", sufficient=False, sufficiency_prob=None, traced_back=True,
                    facts_used=[fact], evidence_used=[evidence])
    assert "- `` D`1, <b>D2</b> `` Bo: Tomatoes." in answer_markdown(answer).splitlines()
    _, body = trace_markdown(answer)
    assert "- `` F`1 `` (core, Event) Bo: Tomatoes. — sources D\\`1" in body, body
    assert "— `` D`1, <b>D2</b> ``" in body, body
