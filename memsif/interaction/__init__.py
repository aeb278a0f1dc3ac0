"""Structured Interaction Memory (§3.2): Topical Segments and Event Trajectories.

``segments.py`` (the double-threshold rule with φ, Eq. 1), ``trajectories.py`` (Top-K candidates and the
judge), ``judge.py`` (scored yes/no with calibration), ``state.py`` (the working state of one namespace),
``restore.py`` (that state from stored records; repair of an interrupted ingest), ``sentences.py`` (the
sentence index that retrieval searches).
"""

from memsif.interaction.state import InteractionState, SegmentState, TrajectoryState

__all__ = ["InteractionState", "SegmentState", "TrajectoryState"]
