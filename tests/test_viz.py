"""Inspector figures are built from stored decisions."""

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
