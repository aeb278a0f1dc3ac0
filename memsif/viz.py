"""Figures and tables for the inspector, built from stored records only (no engine state)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from memsif.records import Message, TopicalSegment

#: Marker colour and label per boundary outcome.
OUTCOMES = {
    ("merge_rule", True): ("merged by rule", "#2a9d8f"),
    ("split_rule", False): ("split by rule", "#e76f51"),
    ("judge", True): ("judge: continue", "#8ab17d"),
    ("judge", False): ("judge: split", "#f4a261"),
    ("judge_error", True): ("judge error → continue", "#9b5de5"),
    ("judge_error", False): ("judge error → split", "#9b5de5"),
}


def phi_timeline(decisions: Sequence[dict[str, Any]], messages: Sequence[Message], tau_split: float,
                 tau_merge: float) -> go.Figure:
    """φ(u_t, S_i) for every message in order, with τ_split/τ_merge lines, markers by decision,
    alternating bands per Topical Segment and dotted lines at session starts (§3.2)."""
    by_id = {m.id: m for m in messages}
    fig = go.Figure()
    scored = [d for d in decisions if d.get("score")]
    groups: dict[tuple[str, bool], list[dict[str, Any]]] = {}
    for d in scored:
        groups.setdefault((d["rule"], d["continued"]), []).append(d)
    for key, rows in groups.items():
        label, colour = OUTCOMES.get(key, (f"{key[0]}", "#888"))
        hover = []
        for d in rows:
            m = by_id.get(d["message_id"])
            text = (m.text[:140] + "…") if m and len(m.text) > 140 else (m.text if m else "")
            s = d["score"]
            judge = (f"<br>judge P(continue) = {d['judge_prob']:.3f}" if d.get("judge_prob") is not None else "")
            hover.append(f"<b>{d['message_id']}</b> {m.speaker if m else ''}: {text}<br>"
                         f"φ = {s['phi']:.3f} (s_sem {s['s_sem']:.3f}, J {s['jaccard']:.3f}, cos {s['cosine']:.3f})"
                         f"{judge}<br>→ {d['segment_id']}")
        fig.add_trace(go.Scattergl(
            x=[d["message_index"] for d in rows], y=[d["score"]["phi"] for d in rows], mode="markers",
            name=label, marker={"color": colour, "size": 7}, hovertext=hover, hoverinfo="text"))
    fig.add_hline(y=tau_merge, line_dash="dash", line_color="#2a9d8f", annotation_text=f"τ_merge {tau_merge}")
    fig.add_hline(y=tau_split, line_dash="dash", line_color="#e76f51", annotation_text=f"τ_split {tau_split}")
    # alternating bands for segments
    starts = [d["message_index"] for d in decisions if not d["continued"]]
    ends = [*starts[1:], len(decisions)]
    for k, (a, b) in enumerate(zip(starts, ends, strict=True)):
        if k % 2 == 0:
            fig.add_vrect(x0=a - 0.5, x1=b - 0.5, fillcolor="#264653", opacity=0.06, line_width=0)
    previous = None
    for m in messages:
        if previous is not None and m.session_id != previous:
            fig.add_vline(x=m.index - 0.5, line_dash="dot", line_color="#999", opacity=0.6)
        previous = m.session_id
    fig.update_layout(
        xaxis={"title": "message index", "rangeslider": {"visible": True}},
        yaxis={"title": "φ(u_t, S_i)", "range": [0, 1.02]},
        legend={"orientation": "h", "y": 1.12}, margin={"l": 50, "r": 20, "t": 40, "b": 40}, height=420,
        hovermode="closest",
    )
    return fig


def segment_rows(segments: Sequence[TopicalSegment], decisions: Sequence[dict[str, Any]]) -> list[list[Any]]:
    """One row per Topical Segment: id, trajectory, size, first..last message, how it was opened."""
    opened = {d["message_id"]: d for d in decisions}
    rows = []
    for s in segments:
        d = opened.get(s.message_ids[0], {})
        how = d.get("rule", "")
        if d.get("score"):
            how += f" φ={d['score']['phi']:.3f}"
        if d.get("judge_prob") is not None:
            how += f" P={d['judge_prob']:.2f}"
        rows.append([s.id, s.trajectory_id or "", len(s.message_ids), s.message_ids[0], s.message_ids[-1],
                     ", ".join(s.session_ids), how, ", ".join(s.entities[:8])])
    return rows


SEGMENT_COLUMNS = ["segment", "trajectory", "messages", "first", "last", "sessions", "opened by", "key entities"]
