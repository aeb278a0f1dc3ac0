"""Figures and tables for the inspector, built from stored records only (no engine state).

What a transcript brought (message text, speaker names, ids, fact statements, questions) is shown as
written: escaped in plotly's hover and tick text (``escape_html``: plotly renders a subset of HTML
there) and in Markdown (``escape_markdown``, ``code_span``); table rows keep it as it is (Gradio
shows a ``str`` cell as text).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from memsif.answer.check import declined
from memsif.interaction.relink import latest_decisions, why_text
from memsif.interaction.titles import trajectory_name
from memsif.interaction.trajectories import trajectory_terms
from memsif.io.dates import implausible
from memsif.markdown import code_span, escape_html, escape_markdown
from memsif.records import (
    CandidateCluster,
    CoreFact,
    Decision,
    EventTrajectory,
    Evidence,
    FactOp,
    FactOperation,
    Message,
    SegmentDecision,
    TopicalSegment,
    TrajectoryDecision,
    record_number,
)
from memsif.timeparse import day_text

if TYPE_CHECKING:  # memsif.answer.query loads the retrieval stack; the figures need only its Answer's fields
    from datetime import datetime

    from memsif.answer.query import Answer

#: Marker colour and label per boundary outcome.
OUTCOMES = {
    ("merge_rule", True): ("merged by rule", "#2a9d8f"),
    ("split_rule", False): ("split by rule", "#e76f51"),
    ("session_rule", False): ("new session", "#264653"),
    ("judge", True): ("judge: continue", "#8ab17d"),
    ("judge", False): ("judge: split", "#f4a261"),
    ("judge_error", True): ("judge error → continue", "#9b5de5"),
    ("judge_error", False): ("judge error → split", "#9b5de5"),
}


def index_tick(n: int) -> int:
    """A whole-number tick step for an axis of ``n`` message indexes (about ten ticks): a fractional
    step would label 1, 1, 2, 2 on a short timeline."""
    return max(1, round(n / 10))


def _segment_decisions(decisions: Sequence[Decision]) -> list[SegmentDecision]:
    return [d for d in decisions if isinstance(d, SegmentDecision)]


def phi_timeline(decisions: Sequence[Decision], messages: Sequence[Message], tau_split: float,
                 tau_merge: float, segments: Sequence[TopicalSegment] = ()) -> go.Figure:
    """φ(u_t, S_i) for every message in order, with τ_split/τ_merge lines, markers by decision,
    alternating bands per Topical Segment and dotted lines at session starts (§3.2); with ``segments``,
    a mark at the top of each band whose hover names the segment and its title (escaped: model output
    over transcript text). ``decisions`` as ``MemSIF.decisions(ns, "segment")`` returns them (trajectory
    decisions are left out)."""
    decisions = _segment_decisions(decisions)
    by_id = {m.id: m for m in messages}
    fig = go.Figure()
    groups: dict[tuple[str, bool], list[SegmentDecision]] = {}
    for d in decisions:
        if d.score is not None:
            groups.setdefault((str(d.rule), d.continued), []).append(d)
    for key, rows in groups.items():
        label, colour = OUTCOMES.get(key, (key[0], "#888"))
        hover = []
        for d in rows:
            m = by_id.get(d.message_id)
            text = (m.text[:140] + "…") if m and len(m.text) > 140 else (m.text if m else "")
            s = d.score
            judge = f"<br>judge P(continue) = {d.judge_prob:.3f}" if d.judge_prob is not None else ""
            if d.read_with:
                judge += f"<br>short reply, read with {escape_html(d.read_with)}"
            if d.rule == "session_rule":
                judge += "<br>new session" + (f" ({d.gap_hours:.1f} h later)" if d.gap_hours is not None else "")
            hover.append(f"<b>{escape_html(d.message_id)}</b> {escape_html(m.speaker) if m else ''}: "
                         f"{escape_html(text)}<br>"
                         f"φ = {s.phi:.3f} (s_sem {s.s_sem:.3f}, J {s.jaccard:.3f}, cos {s.cosine:.3f})"
                         f"{judge}<br>→ {d.segment_id}")
        fig.add_trace(go.Scattergl(
            x=[d.message_index for d in rows], y=[d.score.phi for d in rows], mode="markers",
            name=label, marker={"color": colour, "size": 7}, hovertext=hover, hoverinfo="text"))
    fig.add_hline(y=tau_merge, line_dash="dash", line_color="#2a9d8f", annotation_text=f"τ_merge {tau_merge}")
    fig.add_hline(y=tau_split, line_dash="dash", line_color="#e76f51", annotation_text=f"τ_split {tau_split}")
    # alternating bands for segments
    starts = [d.message_index for d in decisions if not d.continued]
    ends = [*starts[1:], len(decisions)] if starts else []
    for k, (a, b) in enumerate(zip(starts, ends, strict=True)):
        if k % 2 == 0:
            fig.add_vrect(x0=a - 0.5, x1=b - 0.5, fillcolor="#264653", opacity=0.06, line_width=0)
    _title_marks(fig, segments, messages)
    for before, m in pairwise(messages):
        if m.session_id != before.session_id:
            fig.add_vline(x=m.index - 0.5, line_dash="dot", line_color="#999", opacity=0.6)
    fig.update_layout(
        xaxis={"title": "message index", "rangeslider": {"visible": True}, "tickformat": "d",
               "dtick": index_tick(len(decisions))},
        yaxis={"title": "φ(u_t, S_i)", "range": [0, 1.02]},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
        margin={"l": 50, "r": 20, "t": 60, "b": 40}, height=420, hovermode="closest")
    return fig


def _title_marks(fig: go.Figure, segments: Sequence[TopicalSegment], messages: Sequence[Message]) -> None:
    """A mark at the top of each segment's band, its hover the segment's id, size and title (escaped)."""
    index = {m.id: m.index for m in messages}
    titled = [(s, index[s.message_ids[0]], index[s.message_ids[-1]]) for s in segments
              if s.message_ids and s.message_ids[0] in index and s.message_ids[-1] in index]
    if titled:
        fig.add_trace(go.Scattergl(
            x=[(a + b) / 2 for _, a, b in titled], y=[1.0] * len(titled), mode="markers", name="segment titles",
            marker={"symbol": "line-ew", "size": 10, "color": "#264653", "line": {"width": 2}},
            hovertext=[escape_html(f"{s.id} ({len(s.message_ids)} messages): "
                                   f"{s.title.text if s.title and s.title.lines else 'no title'}")
                       for s, _, _ in titled],
            hoverinfo="text"))


def segment_rows(segments: Sequence[TopicalSegment], decisions: Sequence[Decision],
                 session_names: dict[str, str] | None = None) -> list[list[Any]]:
    """One row per Topical Segment: id, title, trajectory, size, first..last message, its sessions (by
    ``session_names``, e.g. an export's conversation titles, where given), how it was opened (from the
    segment decisions of ``decisions``)."""
    names = session_names or {}
    opened = {d.message_id: d for d in _segment_decisions(decisions)}
    rows = []
    for s in segments:
        d = opened.get(s.message_ids[0])
        how = "" if d is None else (str(d.rule) + (f" φ={d.score.phi:.3f}" if d.score is not None else "")
                                    + (f" P={d.judge_prob:.2f}" if d.judge_prob is not None else ""))
        rows.append([s.id, s.title.text if s.title else "", s.trajectory_id or "", len(s.message_ids),
                     s.message_ids[0], s.message_ids[-1],
                     ", ".join(names.get(i, i) for i in s.session_ids), how, ", ".join(s.entities[:8])])
    return rows


SEGMENT_COLUMNS = ["segment", "title", "trajectory", "messages", "first", "last", "sessions", "opened by",
                   "key entities"]


#: Above this many segments the graph labels no nodes (hover still names them).
LABEL_SEGMENTS_UP_TO = 60


def _scored_links(trajectories: Sequence[EventTrajectory],
                  decisions: dict[str, TrajectoryDecision]) -> list[tuple[str, str, float, str]]:
    """(segment, fellow member, P(same thread), why) per segment of a trajectory of two or more whose
    latest decision scored its fellow members: its strongest pair inside the trajectory (each pair once)."""
    links: dict[tuple[str, str], tuple[float, str]] = {}
    members = {i: t.id for t in trajectories if len(t.segment_ids) > 1 for i in t.segment_ids}
    for sid, d in decisions.items():
        inside = [c for c in d.candidates if c.compatible and c.segment_id and sid in members
                  and members.get(c.segment_id) == members[sid] and c.link_prob is not None]
        if inside:
            best = max(inside, key=lambda c: c.link_prob or 0.0)
            pair = tuple(sorted((sid, best.segment_id or ""), key=record_number))
            links[(pair[0], pair[1])] = (best.link_prob or 0.0, why_text(best))
    return [(a, b, p, why) for (a, b), (p, why) in links.items()]


def _draw_links(fig: go.Figure, multi: Sequence[EventTrajectory], by_id: dict[str, TopicalSegment],
                x_of: dict[str, int], y_of: dict[str, int], decisions: Sequence[Decision]) -> None:
    """The trajectory graph's edges: each scored segment's strongest link with its P(same thread) at the
    middle (reasons on hover); a trajectory without scored links, its members in time order."""
    ex: list[float | None] = []
    ey: list[float | None] = []
    scored = [link for link in _scored_links(multi, latest_decisions(decisions))
              if link[0] in by_id and link[1] in by_id]
    linked = {by_id[a].trajectory_id for a, _, _, _ in scored}
    pairs = [(a, b) for t in multi if t.id not in linked
             for a, b in pairwise(sorted((i for i in t.segment_ids if i in by_id), key=x_of.get))]
    for a, b in pairs + [(a, b) for a, b, _, _ in scored]:
        ex += [x_of[a], x_of[b], None]
        ey += [y_of[a], y_of[b], None]
    fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", line={"color": "#bbb", "width": 1}, hoverinfo="skip",
                             showlegend=False))
    if scored:
        fig.add_trace(go.Scatter(
            x=[(x_of[a] + x_of[b]) / 2 for a, b, _, _ in scored],
            y=[(y_of[a] + y_of[b]) / 2 for a, b, _, _ in scored],
            mode="markers+text" if len(scored) <= LABEL_SEGMENTS_UP_TO else "markers",
            text=[f"{p:.2f}" for _, _, p, _ in scored],
            textposition="top center", textfont={"size": 9, "color": "#555"},
            marker={"size": 4, "color": "#888"}, showlegend=False, hoverinfo="text",
            hovertext=[escape_html(f"{a} – {b}: P(same thread) {p:.2f}; {why}") for a, b, p, why in scored]))


def trajectory_graph(segments: Sequence[TopicalSegment], trajectories: Sequence[EventTrajectory],
                     first_index: dict[str, int] | None = None, decisions: Sequence[Decision] = ()) -> go.Figure:
    """Topical Segments as nodes in time order (x = the segment's first message index, or its order
    without ``first_index``), one row per Event Trajectory of two or more segments, the single-segment
    trajectories together on the bottom row; colour = trajectory. Edges: where the latest ``decisions``
    scored a segment's fellow members (the whole-memory construction), each segment's strongest pair in
    its trajectory, its P(same thread) written at the middle and its reasons on hover; otherwise the
    members in time order. Readable at 150+ segments: no node labels past ``LABEL_SEGMENTS_UP_TO`` segments."""
    by_id = {s.id: s for s in segments}
    x_of = {s.id: (first_index.get(s.message_ids[0], k) if first_index and s.message_ids else k)
            for k, s in enumerate(segments)}
    multi = [t for t in trajectories if len(t.segment_ids) > 1]
    row = {t.id: k + 1 for k, t in enumerate(sorted(multi, key=lambda t: min(x_of[i] for i in t.segment_ids)))}
    y_of = {s.id: row.get(s.trajectory_id or "", 0) for s in segments}
    fig = go.Figure()
    _draw_links(fig, multi, by_id, x_of, y_of, decisions)
    order = {t.id: k for k, t in enumerate(trajectories)}
    labelled = len(segments) <= LABEL_SEGMENTS_UP_TO
    fig.add_trace(go.Scatter(
        x=[x_of[s.id] for s in segments], y=[y_of[s.id] for s in segments],
        mode="markers+text" if labelled else "markers",
        text=[s.id for s in segments], textposition="top center", textfont={"size": 9},
        marker={"size": [6 + min(len(s.message_ids), 20) for s in segments],
                "color": [order.get(s.trajectory_id or "", -1) for s in segments], "colorscale": "Turbo"},
        hovertext=[escape_html(f"{s.id} in {s.trajectory_id or '-'}: {len(s.message_ids)} messages "
                               f"{s.message_ids[0]}..{s.message_ids[-1]}"
                               + (f" — {s.title.text}" if s.title and s.title.lines else "")) for s in segments],
        hoverinfo="text", showlegend=False))
    ticks = [0, *row.values()]
    named = ((t.id, trajectory_title([by_id[i] for i in t.segment_ids if i in by_id]))
             for t in sorted(multi, key=lambda t: row[t.id]))
    names = ["single-segment", *(escape_html(_short(f"{t} · {name}")) if name else t for t, name in named)]
    fig.update_layout(xaxis={"title": "message index" if first_index else "segment order", "tickformat": "d"},
                      yaxis={"tickvals": ticks, "ticktext": names, "title": "Event Trajectory"},
                      height=max(360, 60 + 22 * len(ticks)), margin={"l": 220, "r": 10, "t": 40, "b": 40},
                      title=f"Event Trajectories over time: {len(multi)} link two or more of the {len(segments)} "
                            f"segments")
    return fig


def counted(n: int, noun: str) -> str:
    """"1 fact", "2 facts", "0 messages"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


#: Outcome of one Top-K candidate E_j for a closing segment S_i → (legend name, marker symbol, colour).
TRAJECTORY_OUTCOMES = {
    "joined": ("joined this trajectory", "star", "#2a9d8f"),
    "judge_no": ("below the threshold: not the same thread", "x", "#e76f51"),
    "judge_other": ("above the threshold, a likelier one was joined", "diamond", "#f4a261"),
    "below_floor": ("φ at or below the judge's floor: not asked", "circle-open", "#999"),
    "opened": ("opened a new trajectory", "triangle-up", "#264653"),
}


def _candidate_outcome(d: TrajectoryDecision, c) -> str:
    if not d.created and c.trajectory_id == d.trajectory_id and c.compatible:
        return "joined"
    if c.compatible:
        return "judge_other"
    return "judge_no" if c.link_prob is not None or c.judge_prob is not None else "below_floor"


def _candidate_y(c) -> float:
    """P(same thread) of the link model; older logs: the judge's probability, else φ."""
    return next(p for p in (c.link_prob, c.judge_prob, c.score.phi) if p is not None)


def _candidate_parts(d: TrajectoryDecision, c) -> list[str]:
    """What a candidate's hover says: φ with its terms, rare words, days, the judge's and the choice's
    probabilities, the persons and words in common, P(same thread)."""
    parts = [f"φ {c.score.phi:.3f} (s_sem {c.score.s_sem:.2f}, J {c.score.jaccard:.2f})"]
    parts += [f"rare words {c.rare:.2f}"] if c.rare is not None else []
    parts += [f"{c.gap_days:.0f} days apart"] if c.gap_days is not None else []
    parts += [f"judge P(yes) {c.judge_prob:.2f}"] if c.judge_prob is not None else []
    parts += [f"shares {', '.join(c.persons)}: {', '.join(c.terms[:4])}"] if c.persons else []
    parts += [f"P(this thread) {c.choice_prob:.2f} (orders {', '.join(f'{p:.2f}' for p in c.choice_probs)}), "
              f"P(none) {d.none_prob:.2f}"] if c.choice_prob is not None and d.none_prob is not None else []
    parts += [f"P(same thread) {c.link_prob:.2f}"] if c.link_prob is not None and c.choice_prob is None else []
    return parts


def trajectory_decisions_plot(decisions: Sequence[Decision], segments: Sequence[TopicalSegment],
                              first_index: dict[str, int], threshold: float | None = None) -> go.Figure:
    """Why each closed Topical Segment S_i joined its Event Trajectory (§3.2): at the segment's first
    message index, P(same thread) of each of its Top-K candidates (the trajectories of its Top-K
    earlier segments by φ; ``memsif.interaction.link``), marked by outcome (``TRAJECTORY_OUTCOMES``),
    with a line at the link model's ``threshold`` (only over decisions that recorded P(same thread):
    an older log's judge probabilities are shown without it), and a triangle at 0 where the segment opened a new
    trajectory. Hover gives φ with its terms, the rare-word overlap, the days between, the judge's
    P(yes) and the rule. ``decisions`` as ``MemSIF.decisions(ns)`` returns them."""
    by_id = {s.id: s for s in segments}
    points: dict[str, list[tuple[int, float, str]]] = {k: [] for k in TRAJECTORY_OUTCOMES}
    chosen = [d for d in latest_decisions(decisions).values() if d.segment_id in by_id]
    threshold = next((d.threshold for d in chosen if d.threshold is not None), threshold)
    for d in chosen:
        seg = by_id[d.segment_id]
        x = first_index.get(seg.message_ids[0], 0) if seg.message_ids else 0
        for c in d.candidates:
            key = _candidate_outcome(d, c)
            via = f" via {c.segment_id}" if c.segment_id else ""
            points[key].append((x, _candidate_y(c), f"{escape_html(f'{d.segment_id} → {c.trajectory_id}{via}')}: "
                                f"{', '.join(_candidate_parts(d, c))}<br>{TRAJECTORY_OUTCOMES[key][0]}"))
        if d.created:
            opened = f"{d.segment_id} opened {d.trajectory_id}: {d.rule or 'none joined'}"
            points["opened"].append((x, 0.0, escape_html(opened)))
    fig = go.Figure()
    for key, (name, symbol, colour) in TRAJECTORY_OUTCOMES.items():
        if points[key]:
            xs, ys, hover = zip(*points[key], strict=True)
            what = counted(len(xs), "segment" if key == "opened" else "candidate pair")  # the title counts segments
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name=f"{name} ({what})", hovertext=hover,
                                     hoverinfo="text", marker={"symbol": symbol, "color": colour, "size": 9}))
    linked = any(c.link_prob is not None for d in chosen for c in d.candidates)
    chosen_by_choice = any(d.none_prob is not None for d in chosen)
    if threshold is not None and linked:  # an older log's judge probabilities were not held to this threshold
        fig.add_hline(y=threshold, line_dash="dash",
                      annotation_text=f"joins at {'a margin' if chosen_by_choice else 'P'} ≥ {threshold:g}")
    joined = sum(1 for d in chosen if not d.created)
    span = max(first_index.values(), default=0) + 1
    fig.update_layout(xaxis={"title": "message index (segment start)", "tickformat": "d", "dtick": index_tick(span)},
                      yaxis={"title": ("P(this thread) − P(none of these)" if chosen_by_choice else "P(same thread)")
                             if linked or not chosen else "judge P(same event) (older log)",
                             "range": [-1.02 if chosen_by_choice else -0.05, 1.02]}, height=380,
                      legend={"orientation": "h", "y": -0.25}, margin={"l": 60, "r": 20, "t": 40, "b": 40},
                      title=(f"Why segments share trajectories, decided over the whole memory: {joined} of "
                             f"{len(chosen)} share one (stars: their pairs inside it), {len(chosen) - joined} "
                             "stay alone (crosses: their best pairs)")
                      if any(d.threshold is not None for d in chosen) else
                      f"Why segments joined their trajectories: {joined} of {len(chosen)} joined one, "
                      f"{len(chosen) - joined} opened one")
    return fig


def cluster_scatter(clusters: Sequence[CandidateCluster], theta_src: float, theta_qry: float) -> go.Figure:
    """Every candidate cluster as a point (Score_src, Score_qry) with lines at θ_s and θ_q (Eq. 4)."""
    fig = go.Figure()
    for promoted in (False, True):
        rows = [c for c in clusters if bool(c.active_fact_id) == promoted]
        fig.add_trace(go.Scatter(
            x=[c.score_src for c in rows], y=[c.score_qry for c in rows], mode="markers",
            name="promoted to ActiveFact" if promoted else "candidate",
            marker={"size": 11, "symbol": "star" if promoted else "circle",
                    "color": "#2a9d8f" if promoted else "#e9c46a"},
            hovertext=[f"{escape_html(f'{c.id} {c.subject}')}: |R|={len(c.sources)}, |Q|={len(c.queries)}<br>"
                       f"{escape_html((c.statements or [''])[0][:120])}" for c in rows], hoverinfo="text"))
    fig.add_vline(x=theta_src, line_dash="dash", annotation_text=f"θ_s {theta_src}")
    fig.add_hline(y=theta_qry, line_dash="dash", annotation_text=f"θ_q {theta_qry}")
    fig.update_layout(xaxis={"title": "Score_src (Eq. 2)", "range": [-0.02, 1.02]},
                      yaxis={"title": "Score_qry (Eq. 3)", "range": [-0.02, 1.02]}, height=420,
                      margin={"l": 50, "r": 20, "t": 30, "b": 40})
    return fig


FACT_COLUMNS = ["fact", "type", "subject", "statement", "verification", "said on", "sources", "status"]
OP_COLUMNS = ["#", "operation", "facts", "decided by", "reason", "error"]


#: Colour per path that brought a gold turn into MemSIF's context (evidence lens).
LENS_PATHS = {"search": "#1f77b4", "trajectory": "#d62728", "fact": "#2ca02c"}


@dataclass
class LensRow:
    """One question of the Evaluate tab's lens (``memsif.inspector.evaluate``): its gold evidence
    turns and their message indexes, its TED (None with fewer than two gold turns), which gold turns
    each system's context held (``found``, by system name), how MemSIF found each gold turn it held
    (``how``: "search (S12)", "trajectory E3", "fact F4") and each system's evidence recall (None
    without gold turns): by provenance (``recall``) and strict (``strict``: the gold turns'
    answer-bearing sentences in the context, ``eval.metrics.strict_recall``)."""

    question: str
    category: str
    ted: float | None
    gold: list[str]
    gold_index: list[int]
    found: dict[str, list[str]]
    how: dict[str, str]
    recall: dict[str, float | None]
    sample: str = ""
    strict: dict[str, float | None] = field(default_factory=dict)


def evidence_lens(rows: Sequence[LensRow], nce_only: bool = True, nce_ted: float = 0.3) -> go.Figure:
    """Gold evidence turns per question on the message-index axis (one row per question, most
    spread-out first): filled markers coloured by the path that brought a turn into MemSIF's context
    (search, Event Trajectory, fact), open grey circles for turns MemSIF missed, a black cross where
    Hybrid RAG's context holds the turn. ``rows`` as the Evaluate tab makes them."""
    chosen = [r for r in rows if not nce_only or (r.ted is not None and r.ted >= nce_ted)]
    chosen = sorted(chosen, key=lambda r: (r.ted or 0.0))  # most spread-out at the top
    labels = [f"{k + 1}. {escape_html(r.question[:60])}" for k, r in enumerate(chosen)]  # tick text renders HTML
    points: dict[str, list[tuple[int, str, str]]] = {name: [] for name in (*LENS_PATHS, "missed", "hybrid")}
    fig = go.Figure()
    for label, r in zip(labels, chosen, strict=True):
        xs = r.gold_index
        if len(xs) > 1:
            fig.add_trace(go.Scatter(x=[min(xs), max(xs)], y=[label, label], mode="lines", showlegend=False,
                                     line={"color": "#ccc", "width": 1}, hoverinfo="skip"))
        for gid, x in zip(r.gold, xs, strict=True):
            how = r.how.get(gid)
            key = "missed" if how is None else how.split()[0]
            found = f"{gid}: {how or 'missed by MemSIF'}"
            text = f"{escape_html(found)}<br>{escape_html(r.question)}"
            for name in (key, "hybrid") if gid in r.found.get("Hybrid RAG", []) else (key,):
                points[name].append((x, label, text))
    styles = {**{k: ({"color": c, "size": 11}, f"MemSIF: {k}") for k, c in LENS_PATHS.items()},
              "missed": ({"color": "#999", "size": 11, "symbol": "circle-open"}, "MemSIF missed"),
              "hybrid": ({"color": "black", "size": 8, "symbol": "x-thin", "line": {"width": 2, "color": "black"}},
                         "in Hybrid RAG's context")}
    for name, drawn in points.items():
        xs, ys, texts = zip(*drawn, strict=True) if drawn else ((), (), ())
        marker, legend = styles[name]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name=legend, marker=marker, text=texts,
                                 hovertemplate="%{text}<extra></extra>"))
    fig.update_layout(height=min(1600, 200 + 22 * len(chosen)), margin={"l": 10, "r": 10, "t": 70, "b": 40},
                      xaxis={"title": "message index", "tickformat": "d"},
                      yaxis={"categoryorder": "array", "categoryarray": labels, "automargin": True},
                      legend={"orientation": "h", "x": 0, "xanchor": "left", "y": 1.0, "yanchor": "bottom"})
    return fig


def verification_text(fact: CoreFact) -> str:
    """A CoreFact's verification as the fact table shows it: "✓ " and the rule it passed, or
    "not verified: " and why."""
    if (check := fact.verification) is None:
        return "not verified: stored before facts were verified (build the memory again)"
    return f"✓ {check.rule}" if check.verified else check.rule


def fact_rows(facts: Sequence[CoreFact]) -> list[list[Any]]:
    """One row per CoreFact (``FACT_COLUMNS``); its status (a superseded one names its successor, a person's
    correction says so) is followed by what it is about (its attribute key) and, for a fact with versions, by
    when it held (``validity_text``: from its newest source's day until a later fact superseded it) and its
    chain (``fact_chain``: the facts it replaced and what replaced it).
    "said on" is the session day of its newest source, not always the day it happened
    ("last Friday (23 June 2023)")."""
    def status(f: CoreFact) -> str:
        said = {"current": "current", "deleted": "deleted by a person"}.get(f.status,
                                                                           f"superseded by {f.superseded_by}")
        return f"{said} (corrected by a person)" if f.corrected else said

    by_id = {f.id: f for f in facts}
    before = predecessors(facts)

    def history(f: CoreFact) -> str:
        chain = fact_chain(f, by_id, before)
        about = f"; about {f.attribute}" if f.attribute else ""
        return about + (f"; held {validity_text(f)}; {chain}" if chain else "")

    return [[f.id, f.type, f.subject, f.statement, verification_text(f),
             f.event_time.date().isoformat() if f.event_time else "", ", ".join(f.source_message_ids),
             status(f) + history(f)] for f in facts]


def validity_text(fact: CoreFact) -> str:
    """When a CoreFact held: "from 2023-05-08", "2023-05-08 – 2023-08-23" once superseded ("?" for an unknown
    day), or "" for a fact with neither day."""
    start = fact.valid_from or fact.event_time
    first = start.date().isoformat() if start else "?"
    if fact.status == "superseded":
        return f"{first} – {fact.valid_until.date().isoformat() if fact.valid_until else '?'}"
    return f"from {first}" if start else ""


def predecessors(facts: Iterable[CoreFact]) -> dict[str, str]:
    """Each superseding fact's id → the id of the fact it superseded (``CoreFact.superseded_by`` read backwards)."""
    return {f.superseded_by: f.id for f in facts if f.superseded_by}


def fact_chain(fact: CoreFact, by_id: Mapping[str, CoreFact], before: Mapping[str, str] | None = None) -> str:
    """A CoreFact's history as the page shows it: its chain of versions, oldest first, each superseded by the
    next ("F3 → F9 → F14 (current)"), or "" for a fact nothing replaced and that replaced nothing. ``by_id``:
    every fact of the namespace, history included; ``before``: ``predecessors(by_id.values())``, computed once
    by a caller that asks for many facts' chains (else here, in O(n))."""
    before = predecessors(by_id.values()) if before is None else before
    chain, seen = [fact.id], {fact.id}
    while (earlier := before.get(chain[0])) and earlier not in seen:
        chain.insert(0, earlier)
        seen.add(earlier)
    while (later := by_id[chain[-1]].superseded_by if chain[-1] in by_id else None) and later not in seen:
        chain.append(later)
        seen.add(later)
    last = by_id.get(chain[-1])
    return "" if len(chain) == 1 else " → ".join(chain) + (f" ({last.status})" if last else "")


def op_rows(log: Sequence[FactOperation]) -> list[list[Any]]:
    """One row per logged operation (``OP_COLUMNS``); a REJECT row shows the candidate the checks turned
    away; an UPDATE, MERGE or SUPERSEDE row what the fact said before → after; "decided by" says when the
    operation came from the second extraction pass."""
    def facts(r: FactOperation) -> str:
        if (c := r.candidate) is not None:
            return f"✗ [{c.type}] {c.subject}: {c.statement}"
        if r.op in (FactOp.UPDATE, FactOp.MERGE, FactOp.SUPERSEDE) and r.before and r.after:
            old, new = r.before[0], r.after[-1]
            return f"{old.id} → {new.id}: {old.statement} → {new.statement}"
        return ", ".join(r.fact_ids)

    return [[r.seq, str(r.op), facts(r), r.decided_by + (", second pass" if r.extraction_pass == 2 else ""), r.reason,
             r.error or ""] for r in log]


TRAJECTORY_DETAIL_COLUMNS = ["segment", "why it is here", "message", "session", "time", "speaker", "text"]


def trajectory_detail_rows(trajectory_id: str, segments: Sequence[TopicalSegment],
                           trajectories: Sequence[EventTrajectory], messages: Sequence[Message],
                           decisions: Sequence[Decision] = ()) -> list[list[Any]]:
    """The segments and messages of one Event Trajectory, in time order (empty for an unknown id); a
    segment's first row says why it is in the trajectory (its ``TrajectoryDecision.rule``; older logs:
    joined or opened)."""
    if (wanted := next((t for t in trajectories if t.id == trajectory_id), None)) is None:
        return []
    by_seg = {s.id: s for s in segments}
    by_msg = {m.id: m for m in messages}
    why = {d.segment_id: _why(d) for d in decisions if isinstance(d, TrajectoryDecision)}
    return [[sid, why.get(sid, "") if k == 0 else "", *_message_row(by_msg[mid])] for sid in wanted.segment_ids
            for k, mid in enumerate(m for m in by_seg[sid].message_ids if m in by_msg)]


def _why(d: TrajectoryDecision) -> str:
    return d.rule or f"{'opened' if d.created else 'joined'} {d.trajectory_id}"


def message_rows(ids: Sequence[str], messages: Sequence[Message]) -> list[list[Any]]:
    """Rows (id, session, time, speaker, text) for the given message ids, in the given order."""
    by_msg = {m.id: m for m in messages}
    return [_message_row(by_msg[i]) for i in ids if i in by_msg]


def _message_row(m: Message) -> list[Any]:
    return [m.id, m.session_id, _time_cell(m.time), m.speaker, m.text]


def _time_cell(when: datetime | None) -> str:
    """A message's time as a table shows it, marked where it cannot be right (``io.dates``)."""
    shown = when.isoformat(sep=" ", timespec="minutes") if when else ""
    return f"{shown} ⚠ date cannot be right" if when and implausible(when) else shown


def evidence_how(evidence: Evidence) -> str:
    """How an evidence item was found, e.g. ``dense 0.62 + lexical 7.1 (fused 0.033) · segment 0.016``."""
    scores, found_by = evidence.scores, evidence.found_by
    paths = [p for p in ("dense", "lexical") if p in found_by]
    parts = []
    if paths:
        fused = f" (fused {scores['fused']:.3f})" if "fused" in scores else ""
        parts.append(" + ".join(f"{p} {scores[p]:.2f}" if p in scores else p for p in paths) + fused)
    if "segment" in found_by and "segment" in scores:
        parts.append(f"segment {scores['segment']:.3f}")
    if "trajectory" in found_by:
        parts.append("trajectory path")
    if "fact" in found_by:
        parts.append("a fact's source")
    return " · ".join(parts)


#: What the chat says under an answer from a model measured at chance (its model profile: ``memsif.llm.profiles``).
DEMO_MODEL_NOTE = ("⚠️ Answered by **{model}**, the packaged smoke-test model: it judges at chance and its answers "
                   "are unreliable. Pick `auto:packaged:qwen2.5-coder-1.5b-instruct` (the default) in Settings, or "
                   "plug in a bigger one: `MEMSIF_LLM_MODEL=Qwen/Qwen3-4B` (transformers, with a GPU) or "
                   "`MEMSIF_LLM_BACKEND=openai MEMSIF_LLM_BASE_URL=…` (vLLM, TGI, Ollama).")


def best_evidence(evidence: Sequence[Evidence]) -> list[Evidence]:
    """Evidence items by priority (``scores["priority"]``), best first."""
    return sorted(evidence, key=lambda e: -(e.scores.get("priority") or 0.0))


def answer_markdown(answer: Answer, supporting: int = 3, clip_chars: int = 200) -> str:
    """The chat's answer message for a ``memsif.answer.query.Answer``: the answer, which model gave it (with
    the demo-model warning), mentions not in its context, and the best supporting messages (highest
    evidence priority first). An answer that found nothing (no model asked: nothing passed the
    relevance floor; or the model said the memory does not hold it, ``answercheck.declined``) lists no
    supporting messages: what it was given is in the trace. The answer and what the memory holds are
    shown as written (escaped)."""
    lines = ["\n".join(escape_markdown(line) for line in answer.answer.splitlines()) or "(empty answer)"]
    model = answer.model or ""
    if answer.nothing_relevant:
        lines.append("\n_No model was asked: nothing in this memory passed the relevance floor (the nearest "
                     "excerpts are in the trace)._")
        return "\n".join(lines)
    if answer.model_at_chance:
        lines.append("\n" + DEMO_MODEL_NOTE.format(model=model))
    elif model:
        lines.append(f"\n_Answered by {model}{f' on {answer.backend}' if answer.backend else ''}._")
    if declined(answer.answer):
        lines.append("\n_It found no answer in the memory it was given (the excerpts are in the trace)._")
        return "\n".join(lines)
    if answer.backend_warning:
        lines.append("\n" + answer.backend_warning)
    if answer.unsupported_mentions:
        missing = escape_markdown(", ".join(answer.unsupported_mentions))
        lines.append(f"\n⚠️ Not in the memory it was given: **{missing}**; check before trusting this answer.")
    if answer.premise_mentions:
        asked = escape_markdown(", ".join(answer.premise_mentions))
        lines.append(f"\nℹ️ Taken from the question, not confirmed by the memory it was given: **{asked}**.")
    if answer.when_rule:
        lines.append(f"\nℹ️ The model wrote **{escape_markdown(answer.model_answer)}**; its memory resolves the "
                     f"period as written above (see the trace).")
    if best := best_evidence(answer.evidence_used)[:supporting]:
        lines.append("\n**Best supporting messages**")
        for e in best:
            text = e.statement if len(e.statement) <= clip_chars else e.statement[:clip_chars - 1] + "…"
            when = f" ({e.time.date().isoformat()})" if e.time else ""
            lines.append(f"- {_ids(e.source_message_ids)} {escape_markdown(e.subject)}{when}: {escape_markdown(text)}")
    elif answer.facts_used:
        lines.append("\n_From facts only (see the trace)._")
    return "\n".join(lines)


def trace_markdown(answer: Answer) -> tuple[str, str]:
    """(title, body) of a ``memsif.answer.query.Answer``'s trace for a collapsible chat message: facts and
    evidence with their source ids, sufficiency probability, whether it traced back, tokens and
    seconds (§3.5). What the memory holds, the rules' words and the errors are shown as written (escaped)."""
    if (p := answer.sufficiency_prob) is not None:
        gate = f"{'sufficient' if answer.sufficient else 'insufficient'} (P={p:.2f})"
    elif not answer.facts_used:
        gate = "no facts to check"
    else:
        gate = "sufficiency not asked"
    if answer.nothing_relevant:
        gate = "nothing relevant in memory"
    elif answer.not_stated:
        gate = f"the memory does not state it (P={answer.answer_check_prob or 0:.2f})"
    title = (f"Trace · {gate} · "
             f"{'traced back to Structured Interaction Memory' if answer.traced_back else 'facts only'} · "
             f"{answer.tokens_in}+{answer.tokens_out} tokens · {answer.seconds:.1f} s")
    lines = ["**Facts used**" if answer.facts_used else "_No facts used._"]
    for f in answer.facts_used:
        lines.append(f"- {code_span(f.id)} ({f.kind}, {escape_markdown(f.type)}) {escape_markdown(f.subject)}: "
                     f"{escape_markdown(f.statement)} — sources {escape_markdown(', '.join(f.source_message_ids))}"
                     f"{' · a fact of the speaker asked about' if f.found_by == 'subject' else ''}")
    rules = (("Question", answer.aggregation_rule), ("Sufficiency gate", answer.gate_rule),
             ("Relevance", answer.relevance_rule), ("Answer check", answer.answer_check_rule),
             ("Date of the answer", answer.when_rule))
    lines += [f"\n_{what}: {escape_markdown(rule)}_" for what, rule in rules if rule]
    if answer.evidence_used:
        lines.append("\n**Nearest excerpts** (none is about the question; not given to the model)"
                     if answer.nothing_relevant else
                     "\n**Query-local evidence** (oldest first; how each item was found, with its scores)")
        for e in answer.evidence_used:
            where = ", ".join(x for x in (e.segment_id, e.trajectory_id) if x)
            how = evidence_how(e)
            lines.append(f"- {escape_markdown(e.subject)}: {escape_markdown(e.statement)} — "
                         f"{_ids(e.source_message_ids)}{f' ({where})' if where else ''}{f' · {how}' if how else ''}")
    if stages := ", ".join(f"{k} {v:.2f} s" for k, v in answer.seconds_by_stage.items()):
        lines.append(f"\n_Stages: {stages}_")
    if answer.active_facts_changed:
        lines.append(f"\nActiveFacts changed: {escape_markdown(', '.join(answer.active_facts_changed))}")
    if answer.unsupported_mentions:
        lines.append(f"\n⚠️ The answer mentions what its context does not hold: "
                     f"{escape_markdown(', '.join(answer.unsupported_mentions))}")
    if answer.premise_mentions:
        lines.append(f"\nℹ️ The answer repeats the question's words that its context does not hold: "
                     f"{escape_markdown(', '.join(answer.premise_mentions))}")
    lines += [f"\n⚠️ {escape_markdown(err)}" for err in answer.errors]
    return title, "\n".join(lines)


def _ids(message_ids: Sequence[str]) -> str:
    """Source message ids as one code span (shown as written)."""
    return code_span(", ".join(message_ids))


def trajectory_title(members: Sequence[TopicalSegment]) -> str:
    """The name of the Event Trajectory of ``members`` from their titles (``interaction.titles.trajectory_name``;
    "" when they share none)."""
    return trajectory_name([s.title for s in members])


def trajectory_choices(segments: Sequence[TopicalSegment], trajectories: Sequence[EventTrajectory],
                       messages: Sequence[Message]) -> list[tuple[str, str]]:
    """(label, id) per Event Trajectory for the picker, largest first: what it is about (its name from its
    segments' titles, ``trajectory_title``; else its most specific key entities, ``trajectory_terms``; else
    its first words), its segments,
    sessions, messages and dates, so a trajectory is found by what it is about."""
    by_seg = {s.id: s for s in segments}
    by_msg = {m.id: m for m in messages}
    about = trajectory_terms(trajectories, segments, sorted({m.speaker for m in messages}))
    rows = []
    for t in trajectories:
        members = [by_seg[i] for i in t.segment_ids if i in by_seg]
        ids = [m for s in members for m in s.message_ids if m in by_msg]
        if not ids:
            continue
        times = [by_msg[m].time for m in ids if by_msg[m].time]
        when = (day_text(min(times)) if min(times).date() == max(times).date()
                else f"{day_text(min(times))} – {day_text(max(times))}") if times else "undated"
        what = (trajectory_title(members) or ", ".join(about[t.id])
                or " ".join(by_msg[ids[0]].text.split()[:8]) + "…")
        sessions = list(dict.fromkeys(sid.removeprefix("session_") for s in members for sid in s.session_ids))
        where = f"session{'s' * (len(sessions) != 1)} {', '.join(sessions)}" if sessions else "no session"
        rows.append((len(ids), f"{t.id} · {what} · {len(members)} segment{'s' * (len(members) != 1)} in {where} · "
                               f"{len(ids)} messages · {when}", t.id))
    return [(label, tid) for _, label, tid in sorted(rows, key=lambda r: (-r[0], record_number(r[2])))]
