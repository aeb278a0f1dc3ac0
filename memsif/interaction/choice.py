"""Event Trajectory decision as one comparative choice over gated candidates (§3.2).

For a closing Topical Segment S_i: the earlier trajectories that pass the gate (``interaction.joinable``:
a person and a rare or title word in common, within the window) are ranked by the IDF of the terms
they share and the first K are offered to the LLM at once — their segments' titles lettered A, B, …
and "none of these" (``prompts.trajectory_choice``). The prompt is asked in two orders (the threads,
then none; none, then the threads reversed) and each option's probability is averaged, which cancels
the model's preference for a letter or a position. S_i joins the best thread when its probability
beats "none of these" by ``margin``; otherwise it opens a new trajectory. Every option's probability
in both orders, the margin and the rule go into the ``TrajectoryDecision``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memsif.errors import LLMError
from memsif.interaction import joinable
from memsif.interaction.state import InteractionState, SegmentState, TrajectoryState
from memsif.llm import LLM
from memsif.matching import SemanticMapping, phi
from memsif.prompts import trajectory_choice
from memsif.records import TrajectoryCandidate

NAME = "trajectory_link/choice-1"
#: Segments of a trajectory whose titles an option shows (the newest), and title lines at most.
OPTION_SEGMENTS = 3
OPTION_LINES = 4


@dataclass
class ChoiceOutcome:
    """What the choice decided: the candidates (one per gated trajectory offered), the trajectory joined
    (None: open a new one), P(none of these), the best option's margin over it, the rule in words."""

    candidates: list[TrajectoryCandidate] = field(default_factory=list)
    joined: str | None = None
    none_prob: float | None = None
    margin: float | None = None
    rule: str = ""
    prompt_version: str | None = None
    error: str | None = None
    gated_out: int = 0


class ChoiceLinker:
    """Gates the earlier trajectories of a closing segment and asks ``llm`` to pick one or none."""

    def __init__(self, llm: LLM, rule: joinable.GateRule, margin: float, top_k: int, alpha: float,
                 mapping: SemanticMapping) -> None:
        self.llm, self.rule, self.margin, self.top_k = llm, rule, margin, top_k
        self.alpha, self.mapping = alpha, mapping
        self.calls = 0
        self._sides: dict[str, tuple[int, joinable.Side]] = {}
        self._trajectory_sides: dict[str, tuple[tuple[tuple[str, int], ...], joinable.Side]] = {}

    def side(self, state: InteractionState, seg: SegmentState) -> joinable.Side:
        """The gate's view of ``seg`` (its title's persons and words, what was said), kept while it is unchanged."""
        size = len(seg.record.message_ids)
        cached = self._sides.get(seg.record.id)
        if cached is None or cached[0] != size:
            rec = seg.record
            lines = rec.title.lines if rec.title else []
            cached = self._sides[rec.id] = (size, joinable.title_side(
                lines, (m.text for m in state.segment_messages(seg)), rec.start_time, rec.end_time))
        return cached[1]

    def trajectory_side(self, state: InteractionState, traj: TrajectoryState) -> joinable.Side:
        """The union of a trajectory's segments' sides, kept while its segments and their sizes are unchanged
        (each closing segment gates every earlier trajectory: the union is not redone for each)."""
        key = tuple((i, len(state.segment(i).record.message_ids)) for i in traj.record.segment_ids)
        cached = self._trajectory_sides.get(traj.record.id)
        if cached is None or cached[0] != key:
            side = joinable.Side.union(self.side(state, state.segment(i)) for i in traj.record.segment_ids)
            cached = self._trajectory_sides[traj.record.id] = (key, side)
        return cached[1]

    def decide(self, state: InteractionState, seg: SegmentState, idf: Callable[[str], float],
               segments: int) -> ChoiceOutcome:
        """Gate every earlier trajectory, offer the best ``top_k`` to the model, join or not.

        ``idf`` and ``segments``: the namespace's vocabulary as ``seg`` closes. A failing model call
        joins nothing and records the error.
        """
        new = self.side(state, seg)
        earlier = [t for t in state.trajectories if t.record.segment_ids]
        passed = [(traj, result) for traj in earlier if (result := joinable.check(
            new, self.trajectory_side(state, traj), idf, segments, self.rule)).passed]
        passed.sort(key=lambda tr: (-sum(idf(t) for t in tr[1].terms), -tr[0].record.index))
        offered = passed[:self.top_k]
        out = ChoiceOutcome(gated_out=len(earlier) - len(passed))
        if not offered:
            out.rule = f"new trajectory: none of {len(earlier)} earlier trajectories passed the gate"
            return out
        own = seg.record.title.lines if seg.record.title else []
        texts = [option_text(state, traj, result.persons) for traj, result in offered]
        forward = trajectory_choice.build(own, [*texts, trajectory_choice.NONE], self._ids(state, seg, offered))
        backward = trajectory_choice.build(own, [trajectory_choice.NONE, *reversed(texts)], forward.input_ids)
        out.prompt_version = forward.version
        try:
            p1 = self.llm.choice_probabilities(forward, trajectory_choice.labels(len(texts) + 1))
            p2 = self.llm.choice_probabilities(backward, trajectory_choice.labels(len(texts) + 1))
        except LLMError as exc:
            out.error = f"{type(exc).__name__}: {exc}"
            out.rule = f"new trajectory: the choice failed ({out.error})"
            return out
        finally:
            self.calls += 2
        p2 = [*reversed(p2[1:]), p2[0]]  # back to the forward order: the threads, then none
        mean = [(a + b) / 2 for a, b in zip(p1, p2, strict=True)]
        out.none_prob = round(mean[-1], 4)
        for (traj, result), a, b, p in zip(offered, p1, p2, mean, strict=False):
            score = phi(seg.profile.mean, seg.profile.entities, traj.profile.mean, traj.profile.entities,
                        self.alpha, self.mapping)
            out.candidates.append(TrajectoryCandidate(
                trajectory_id=traj.record.id, score=score, segment_id=traj.record.segment_ids[-1],
                persons=list(result.persons), terms=list(result.terms[:8]),
                gap_days=None if result.gap_days is None else round(result.gap_days, 2),
                choice_probs=[round(a, 4), round(b, 4)], choice_prob=round(p, 4),
                link_prob=round(p - mean[-1], 4), compatible=p - mean[-1] >= self.margin))
        best = max(out.candidates, key=lambda c: c.choice_prob or 0.0)
        out.margin = best.link_prob
        how = (f"P({best.trajectory_id}) {best.choice_prob:.2f} − P(none) {out.none_prob:.2f} = {out.margin:+.2f} "
               f"{'≥' if best.compatible else '<'} margin {self.margin:g}, over {len(offered)} gated "
               f"trajector{'y' if len(offered) == 1 else 'ies'} (two orders averaged)")
        if best.compatible:
            out.joined = best.trajectory_id
            out.rule = f"joined {best.trajectory_id}: {how}"
        else:
            out.rule = f"new trajectory: {how}"
        return out

    @staticmethod
    def _ids(state: InteractionState, seg: SegmentState,
             offered: Sequence[tuple[TrajectoryState, joinable.GateResult]]) -> list[str]:
        """The messages the prompt's titles stand for: the new segment's and the offered segments'."""
        shown = [seg, *(state.segment(i) for traj, _ in offered for i in traj.record.segment_ids[-OPTION_SEGMENTS:])]
        return [i for s in shown for i in (s.record.title.input_ids if s.record.title else [])]


def option_text(state: InteractionState, traj: TrajectoryState, persons: Sequence[str]) -> str:
    """A trajectory as one option: the title lines of its newest ``OPTION_SEGMENTS`` segments, newest
    first, lines about the shared ``persons`` first, at most ``OPTION_LINES``, joined by "; "."""
    titles = [state.segment(sid).record.title for sid in reversed(traj.record.segment_ids[-OPTION_SEGMENTS:])]
    lines = list(dict.fromkeys(line for title in titles if title for line in title.lines))
    lines.sort(key=lambda line: line.split(":", 1)[0].strip().lower() not in persons)
    return "; ".join(lines[:OPTION_LINES])
