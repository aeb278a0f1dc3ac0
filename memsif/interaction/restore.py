"""Structured Interaction Memory state rebuilt from stored records, and the repair of what an
interrupted ingest left (§3.2 state; no I/O here: the ingest pipeline reads and writes).

An ingest writes segments, trajectories and decisions before its messages, so a process killed in
between (``kill -9``, power loss) leaves records that name messages which were never stored. Those are
the newest records; :func:`plan_repair` says which to trim or delete, with their decisions, and the
next ingest of the same transcript redoes them (ingest is idempotent by source id).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memsif.errors import StoreError
from memsif.interaction.state import InteractionState, SegmentState, TrajectoryState
from memsif.matching import UnitProfile
from memsif.records import Decision, EventTrajectory, SegmentDecision, TopicalSegment, record_number
from memsif.store import StoredMessage


@dataclass
class Repair:
    """What an interrupted ingest left, to delete or rewrite (empty when nothing was left)."""

    segments: list[TopicalSegment] = field(default_factory=list)         # the consistent segments
    trajectories: list[EventTrajectory] = field(default_factory=list)    # the consistent trajectories
    dropped_segments: set[str] = field(default_factory=set)
    gone_trajectories: set[str] = field(default_factory=set)
    rewritten_segments: list[TopicalSegment] = field(default_factory=list)
    rewritten_trajectories: list[EventTrajectory] = field(default_factory=list)
    stale_decisions: list[int] = field(default_factory=list)             # seq numbers

    @property
    def needed(self) -> bool:
        return bool(self.dropped_segments or self.gone_trajectories or self.rewritten_segments
                    or self.rewritten_trajectories)

    def summary(self) -> str:
        return (f"{len(self.dropped_segments)} segments and {len(self.gone_trajectories)} trajectories removed, "
                f"{len(self.rewritten_segments)} segments and {len(self.rewritten_trajectories)} trajectories "
                f"trimmed, {len(self.stale_decisions)} decisions removed")


def messages_state(namespace: str, dim: int, rows: Sequence[StoredMessage]) -> InteractionState:
    """A state holding the stored messages with their embeddings, entities and segment ids."""
    state = InteractionState(namespace, dim)
    for row in rows:
        state.add_message(row.message, row.vector, row.entities)
        if row.segment_id:
            state.segment_of[row.message.id] = row.segment_id
    return state


def _rebuilt_segment(seg: TopicalSegment, members: list[str], state: InteractionState) -> TopicalSegment:
    """``seg`` cut back to ``members`` (stored messages, already in ``state``), its derived fields recomputed."""
    msgs = [state.messages[m] for m in members]
    times = [m.time for m in msgs if m.time is not None]
    return seg.model_copy(update={
        "message_ids": members,
        "entities": sorted(set().union(*(state.entities[m] for m in members))),
        "session_ids": list(dict.fromkeys(m.session_id for m in msgs if m.session_id)),
        "start_time": times[0] if times else None, "end_time": times[-1] if times else None,
        "facts_extracted_upto": min(seg.facts_extracted_upto, len(members)),
    })


def plan_repair(state: InteractionState, segments: Sequence[TopicalSegment],
                trajectories: Sequence[EventTrajectory], decisions: Sequence[Decision]) -> Repair:
    """Segments and trajectories consistent with the stored messages (already in ``state``), and what
    to delete or rewrite to get there (sentences of messages never stored go too: the writer finds them).

    Raises:
        StoreError: the damage is not at the end of the namespace (not left by an interrupted ingest);
            delete the namespace and ingest again.
    """
    stored = set(state.messages)
    repair = Repair()
    for seg in segments:
        members = [m for m in seg.message_ids if m in stored]
        if not members:
            repair.dropped_segments.add(seg.id)
            continue
        if len(members) < len(seg.message_ids):
            seg = _rebuilt_segment(seg, members, state)
            repair.rewritten_segments.append(seg)
        repair.segments.append(seg)
    dropped = repair.dropped_segments
    if dropped and [s.id for s in segments[len(repair.segments):]] != sorted(dropped, key=record_number):
        raise StoreError(f"Namespace {state.namespace!r} has segments without stored messages in its middle; "
                         "delete the namespace and ingest the transcript again.")
    for traj in trajectories:
        members = [sid for sid in traj.segment_ids if sid not in dropped]
        if not members:
            repair.gone_trajectories.add(traj.id)
            continue
        if len(members) < len(traj.segment_ids):
            traj = traj.model_copy(update={"segment_ids": members})
            repair.rewritten_trajectories.append(traj)
        repair.trajectories.append(traj)
    # A segment names the trajectory that lists it, or none (its assignment is redone).
    listed = {sid: t.id for t in repair.trajectories for sid in t.segment_ids}
    unassigned: set[str] = set()
    for seg in repair.segments:
        if seg.trajectory_id != listed.get(seg.id):
            seg.trajectory_id = listed.get(seg.id)
            if seg.trajectory_id is None:
                unassigned.add(seg.id)
            if seg not in repair.rewritten_segments:
                repair.rewritten_segments.append(seg)
    if not repair.needed:
        return repair
    repair.stale_decisions = [
        d.seq for d in decisions
        if d.seq is not None and ((isinstance(d, SegmentDecision) and d.message_id not in stored)
                                  or (not isinstance(d, SegmentDecision)
                                      and (d.segment_id in dropped | unassigned
                                           or d.trajectory_id in repair.gone_trajectories)))]
    return repair


def restore(state: InteractionState, segments: Sequence[TopicalSegment],
            trajectories: Sequence[EventTrajectory]) -> InteractionState:
    """``state`` (its messages loaded) with its segments and trajectories, profiles re-pooled from the
    stored message embeddings (the store holds no redundant sums)."""
    for seg in segments:
        profile = UnitProfile(state.dim)
        for mid in seg.message_ids:
            profile.add(state.vectors[mid], state.entities[mid])
        state.segments.append(SegmentState(seg, profile))
    for traj in trajectories:
        profile = UnitProfile(state.dim)
        for sid in traj.segment_ids:
            profile.absorb(state.segment(sid).profile)
        state.trajectories.append(TrajectoryState(traj, profile))
    return state


def mean_vector(state: InteractionState, message_ids: Sequence[str]) -> np.ndarray:
    """(d,) mean of the messages' embeddings: a unit's stored vector."""
    mean: np.ndarray = np.mean([state.vectors[m] for m in message_ids], axis=0)
    return mean
