"""A message where it sits: its Topical Segment (a window of it, the message in bold), the segment's
Event Trajectory and its other segments, and the φ timeline with the message marked. The Chat tab
opens an answer's evidence this way, the Search tab what it found."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memsif import day_text
from memsif.inspector.common import Inspector, SessionSettings
from memsif.markdown import code_span, escape_html, escape_markdown
from memsif.viz import counted, phi_timeline, trajectory_title

#: Messages shown on each side of the message in its Topical Segment.
CONTEXT_MESSAGES = 4


@dataclass(frozen=True)
class MessagePlace:
    """Where a message sits, bound to the page's ``Inspector`` (``app``): the Chat and Search tabs open
    messages with it."""

    app: Inspector

    def show(self, namespace: str | None, settings: SessionSettings | None,
             message_id: str | None) -> tuple[str, Any]:
        """Message ``message_id`` of this session's memory in context (module docstring); what the
        messages say, who said it and their ids are shown as written. Returns (markdown, timeline
        figure); ("", None) without a message or memory."""
        eng = self.app.session_engine(namespace, settings)
        if not message_id or eng is None or not namespace:
            return "", None
        messages = eng.messages(namespace)
        by_id = {m.id: m for m in messages}
        target = by_id.get(message_id)
        if target is None:
            return f"Message {code_span(message_id)} is not in this session's memory.", None
        segments = eng.segments(namespace)
        segment = next((s for s in segments if message_id in s.message_ids), None)
        lines = [f"**{code_span(message_id)}** — {escape_markdown(target.speaker)}, {day_text(target.time)}, message "
                 f"{target.index + 1} of {len(messages)}"]
        if segment is not None:
            k = segment.message_ids.index(message_id)
            window = segment.message_ids[max(0, k - CONTEXT_MESSAGES):k + CONTEXT_MESSAGES + 1]
            entities = escape_markdown(", ".join(sorted(segment.entities)[:8])) or "–"
            about = f" — {escape_markdown(segment.title.text)}" if segment.title and segment.title.lines else ""
            lines.append(f"\nTopical Segment **{segment.id}**{about} ({counted(len(segment.message_ids), 'message')}, "
                         f"key entities: {entities}):\n")
            if window[0] != segment.message_ids[0]:
                lines.append("- …")
            for mid in window:
                m = by_id[mid]
                text = f"{code_span(mid)} {escape_markdown(m.speaker)}: {escape_markdown(m.text)}"
                lines.append(f"- **→ {text}**" if mid == message_id else f"- {text}")
            if window[-1] != segment.message_ids[-1]:
                lines.append("- …")
            if segment.trajectory_id:
                members = [s for s in segments if s.trajectory_id == segment.trajectory_id]
                others = [s for s in members if s.id != segment.id]
                spans = ", ".join(f"{s.id} ({day_text(s.start_time)})" for s in others[:12]) or "none: it stands alone"
                name = trajectory_title(members)
                named = f" ({escape_markdown(name)})" if name and others else ""
                lines.append(f"\nEvent Trajectory **{segment.trajectory_id}**{named}; its other segments: {spans}"
                             f"{' …' if len(others) > 12 else ''}")
        method = eng.config.method
        fig = phi_timeline(eng.decisions(namespace, "segment"), messages, method.tau_split, method.tau_merge, segments)
        fig.add_vline(x=target.index, line_color="#d62728", line_width=2, annotation_text=escape_html(message_id),
                      annotation_position="top")
        return "\n".join(lines), fig
