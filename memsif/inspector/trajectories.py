"""Trajectories tab: Topical Segments linked into Event Trajectories (graph in time order), why each
segment joined its trajectory (φ of its Top-K candidates, the judge's verdicts), and a picker listing
one trajectory's segments and messages (§3.2)."""

from __future__ import annotations

from dataclasses import dataclass, field

import gradio as gr

from memsif.inspector.common import EMPTIED, Inspector, Page, SessionSettings, Views, guard
from memsif.viz import (
    TRAJECTORY_DETAIL_COLUMNS,
    trajectory_choices,
    trajectory_decisions_plot,
    trajectory_detail_rows,
    trajectory_graph,
)


@dataclass(init=False)
class TrajectoriesViews(Views):
    """The Trajectories tab's components; a delete empties the graph, lanes, trajectory picker and its table."""

    graph: gr.Plot = field(metadata={EMPTIED: None})
    lanes: gr.Plot = field(metadata={EMPTIED: None})
    pick: gr.Dropdown = field(metadata={EMPTIED: gr.Dropdown(choices=[], value=None)})
    table: gr.Dataframe = field(metadata={EMPTIED: []})
    refresh_btn: gr.Button


@dataclass(frozen=True)
class TrajectoriesTab:
    """The Trajectories tab's handlers, bound to the page's ``Inspector`` (``app``)."""

    app: Inspector
    title = "Trajectories"

    def layout(self) -> TrajectoriesViews:
        ui = TrajectoriesViews()
        ui.refresh_btn = gr.Button("Refresh")
        ui.graph = gr.Plot(label="Topical Segments linked into Event Trajectories", elem_id="traj-graph")
        ui.lanes = gr.Plot(label="Why each segment is in its trajectory: P(same thread) of its pairs (over the whole "
                                 "memory) or of its Top-K candidates (online)",
                           elem_id="traj-decisions")
        ui.pick = gr.Dropdown(label="Trajectory (largest first: what it is about, its size and dates)", choices=[],
                              allow_custom_value=True, elem_id="trajectory-pick")
        ui.table = gr.Dataframe(headers=TRAJECTORY_DETAIL_COLUMNS, label="Its segments and messages", wrap=True,
                                max_height=400)
        return ui

    @guard
    def trajectories_view(self, namespace: str | None, settings: SessionSettings | None = None):
        """Trajectory graph, the trajectory decisions plot and the trajectory picker of this session's memory."""
        eng = self.app.session_engine(namespace, settings)
        if eng is None:
            return None, None, gr.Dropdown(choices=[], value=None)
        segments, trajectories, messages = eng.segments(namespace), eng.trajectories(namespace), eng.messages(namespace)
        index, decisions = {m.id: m.index for m in messages}, eng.decisions(namespace, "trajectory")
        return (trajectory_graph(segments, trajectories, index, decisions),
                trajectory_decisions_plot(decisions, segments, index, eng.trajectory_threshold()),
                gr.Dropdown(choices=trajectory_choices(segments, trajectories, messages), value=None))

    @guard
    def trajectory_detail(self, trajectory_id: str | None, namespace: str | None,
                          settings: SessionSettings | None = None):
        """The segments and messages of one Event Trajectory, in time order."""
        eng = self.app.session_engine(namespace, settings)
        if not trajectory_id or eng is None:
            return []
        return trajectory_detail_rows(trajectory_id, eng.segments(namespace), eng.trajectories(namespace),
                                      eng.messages(namespace), eng.decisions(namespace, "trajectory"))

    def wire(self, page: Page) -> None:
        """The tab's own events (plotly sizes a figure drawn in a hidden tab at half width: drawn again
        when the tab is shown)."""
        t, per_session = page[TrajectoriesViews], [page.namespace, page.settings]
        drawn = [t.graph, t.lanes, t.pick]
        for trigger, api_name in ((t.refresh_btn.click, "trajectories"), (t.tab.select, False)):
            trigger(self.trajectories_view, inputs=per_session, outputs=drawn, api_name=api_name)
        t.pick.change(self.trajectory_detail, inputs=[t.pick, *per_session], outputs=t.table, api_name="trajectory")
