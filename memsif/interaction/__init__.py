"""Structured Interaction Memory (§3.2): Topical Segments and Event Trajectories.

``segments.py`` (the double-threshold rule with φ, Eq. 1), ``trajectories.py`` (Top-K candidate Event
Trajectories for a closed segment), ``link.py`` (whether a segment joins one: the judge or the pair's
measures), ``choice.py`` and ``joinable.py`` (the comparative choice among the threads a segment may join), ``judge.py``
(scored yes/no with calibration), ``titles.py`` (segment titles and trajectory names), ``state.py`` (the
working state of one namespace), ``restore.py`` (that state from stored records; repair of an interrupted
ingest), ``sentences.py`` (the sentence index that retrieval searches, §3.5), ``forecast.py`` (the judge prompts
a build expects, a dry run of the segment rule, for the waits the inspector states).
"""

from memsif.interaction.state import InteractionState, SegmentState, TrajectoryState

__all__ = ["InteractionState", "SegmentState", "TrajectoryState"]
