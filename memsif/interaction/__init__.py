"""Structured Interaction Memory (§3.2): Topical Segments and Event Trajectories."""

from memsif.interaction.state import InteractionState, SegmentState, TrajectoryState

__all__ = ["InteractionState", "SegmentState", "TrajectoryState"]
