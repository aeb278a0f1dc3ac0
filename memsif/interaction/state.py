"""In-memory working state of one namespace's Structured Interaction Memory.

Rebuilt from the store at the start of an ingest (profiles are re-pooled from the stored message
embeddings, so the store holds no redundant sums), mutated by the builders, then written back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memsif.matching import UnitProfile
from memsif.records import EventTrajectory, Message, TopicalSegment, record_number


@dataclass
class SegmentState:
    record: TopicalSegment
    profile: UnitProfile


@dataclass
class TrajectoryState:
    record: EventTrajectory
    profile: UnitProfile


@dataclass
class InteractionState:
    """Messages, their (d,) embeddings and entity sets, segments and trajectories of a namespace."""

    namespace: str
    dim: int
    messages: dict[str, Message] = field(default_factory=dict)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    entities: dict[str, frozenset[str]] = field(default_factory=dict)
    segment_of: dict[str, str] = field(default_factory=dict)
    segments: list[SegmentState] = field(default_factory=list)
    trajectories: list[TrajectoryState] = field(default_factory=list)
    next_decision_seq: int = 0

    @property
    def current_segment(self) -> SegmentState | None:
        return self.segments[-1] if self.segments else None

    def segment(self, segment_id: str) -> SegmentState:
        return self.segments[record_number(segment_id) - 1]

    def trajectory(self, trajectory_id: str) -> TrajectoryState:
        """The trajectory of that id (ids may have gaps: a relink retires trajectories).

        Raises:
            KeyError: no trajectory has that id.
        """
        k = record_number(trajectory_id) - 1
        if 0 <= k < len(self.trajectories) and self.trajectories[k].record.id == trajectory_id:
            return self.trajectories[k]
        for t in self.trajectories:
            if t.record.id == trajectory_id:
                return t
        raise KeyError(f"namespace {self.namespace!r} holds no Event Trajectory {trajectory_id}")

    def add_message(self, message: Message, vector: np.ndarray, entities: frozenset[str]) -> None:
        self.messages[message.id] = message
        self.vectors[message.id] = vector
        self.entities[message.id] = entities

    def open_segment(self, message: Message) -> SegmentState:
        """S_{i+1} initialised with ``message`` (already added)."""
        seg = SegmentState(
            TopicalSegment(id=f"S{len(self.segments) + 1}", namespace=self.namespace, index=len(self.segments),
                           message_ids=[]),
            UnitProfile(self.dim),
        )
        self.segments.append(seg)
        self.append_to_segment(seg, message)
        return seg

    def append_to_segment(self, seg: SegmentState, message: Message) -> None:
        """Append ``message`` to ``seg``; the segment's trajectory (if any) is updated too (§3.2)."""
        vec, ents = self.vectors[message.id], self.entities[message.id]
        seg.profile.add(vec, ents)
        rec = seg.record
        rec.message_ids.append(message.id)
        rec.entities = sorted(seg.profile.entities)
        if message.session_id and message.session_id not in rec.session_ids:
            rec.session_ids.append(message.session_id)
        if message.time is not None:
            rec.start_time = rec.start_time or message.time
            rec.end_time = message.time
        self.segment_of[message.id] = rec.id
        if rec.trajectory_id is not None:
            traj = self.trajectory(rec.trajectory_id)
            traj.profile.add(vec, ents)
            self._refresh_trajectory(traj)

    def open_trajectory(self, seg: SegmentState) -> TrajectoryState:
        """A new trajectory E_{n+1} holding ``seg`` (n the largest number used so far)."""
        number = max((record_number(t.record.id) for t in self.trajectories), default=0) + 1
        traj = TrajectoryState(
            EventTrajectory(id=f"E{number}", namespace=self.namespace, index=number - 1, segment_ids=[]),
            UnitProfile(self.dim),
        )
        self.trajectories.append(traj)
        self.assign(seg, traj)
        return traj

    def replace_trajectories(self, groups: Sequence[tuple[str, Sequence[str]]]) -> None:
        """Every Event Trajectory replaced by ``groups``: (trajectory id, its segment ids) each, every
        segment in one group; a kept id keeps its record's other fields, re-pooled
        (``interaction.relink``)."""
        old = {t.record.id: t.record for t in self.trajectories}
        self.trajectories = []
        for tid, members in sorted(groups, key=lambda g: record_number(g[0])):
            record = old[tid].model_copy(update={"segment_ids": []}) if tid in old else EventTrajectory(
                id=tid, namespace=self.namespace, index=record_number(tid) - 1, segment_ids=[])
            traj = TrajectoryState(record, UnitProfile(self.dim))
            self.trajectories.append(traj)
            for sid in sorted(members, key=record_number):
                self.assign(self.segment(sid), traj)

    def assign(self, seg: SegmentState, traj: TrajectoryState) -> None:
        """Append segment ``seg`` to trajectory ``traj`` and re-pool the trajectory."""
        traj.record.segment_ids.append(seg.record.id)
        traj.profile.absorb(seg.profile)
        seg.record.trajectory_id = traj.record.id
        self._refresh_trajectory(traj)

    def _refresh_trajectory(self, traj: TrajectoryState) -> None:
        rec = traj.record
        rec.entities = sorted(traj.profile.entities)
        times = [t for sid in rec.segment_ids for t in (self.segment(sid).record.start_time,
                                                          self.segment(sid).record.end_time) if t]
        if times:
            rec.start_time, rec.end_time = min(times), max(times)

    def segment_messages(self, seg: SegmentState, last: int | None = None) -> list[Message]:
        ids = seg.record.message_ids if last is None else seg.record.message_ids[-last:]
        return [self.messages[i] for i in ids]
