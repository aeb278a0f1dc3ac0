"""Trajectories tab: Topical Segments linked into Event Trajectories (graph in time order and
swimlanes over message index) and a picker listing one trajectory's segments and messages (§3.2)."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from memsif.inspector.common import guard, session_engine
from memsif.viz import (
    TRAJECTORY_DETAIL_COLUMNS,
    trajectory_detail_rows,
    trajectory_graph,
    trajectory_swimlanes,
)


@guard
def trajectories_view(namespace: str | None, settings: dict | None = None):
    """Trajectory graph, swimlanes and the trajectory ids of this session's memory."""
    eng = session_engine(namespace, settings)
    if eng is None:
        return None, None, gr.Dropdown(choices=[], value=None)
    segments, trajectories = eng.segments(namespace), eng.trajectories(namespace)
    index = {m.id: m.index for m in eng.messages(namespace)}
    ids = [t.id for t in trajectories]
    return (trajectory_graph(segments, trajectories, index), trajectory_swimlanes(segments, trajectories, index),
            gr.Dropdown(choices=ids, value=None))


@guard
def trajectory_detail(trajectory_id: str | None, namespace: str | None, settings: dict | None = None):
    """The segments and messages of one Event Trajectory, in time order."""
    eng = session_engine(namespace, settings)
    if not trajectory_id or eng is None:
        return []
    return trajectory_detail_rows(trajectory_id, eng.segments(namespace), eng.trajectories(namespace),
                                  eng.messages(namespace))


def layout() -> SimpleNamespace:
    """The Trajectories tab's components."""
    ui = SimpleNamespace()
    ui.refresh_btn = gr.Button("Refresh")
    ui.graph = gr.Plot(label="Topical Segments linked into Event Trajectories", elem_id="traj-graph")
    ui.lanes = gr.Plot(label="Event Trajectories over time", elem_id="traj-lanes")
    ui.pick = gr.Dropdown(label="Trajectory", choices=[], allow_custom_value=True)
    ui.table = gr.Dataframe(headers=TRAJECTORY_DETAIL_COLUMNS, label="Its segments and messages", wrap=True,
                            max_height=400)
    return ui
