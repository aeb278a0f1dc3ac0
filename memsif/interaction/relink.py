"""Event Trajectories of a whole namespace, decided again (§3.2; ``interaction.clustering``).

Run at the end of every ingest's structure step (the default ``trajectory_link``, "cluster") and on
demand (``MemSIF.relink``, ``python -m memsif relink``). It reads every Topical Segment of the
working state, scores every pair (``interaction.pairs`` measures, the shipped ``PairScorer``), groups
them by average linkage, and writes the groups back as Event Trajectories:

- **Stable ids.** Each new group keeps the id of the earlier trajectory it overlaps most (ties: the
  older trajectory), so a page that showed E3 still shows E3; a group that overlaps none gets a new
  id, and a trajectory left with no segment is retired (``RelinkResult.retired``).
- **A decision per changed segment.** A segment whose trajectory or fellow members changed gets a
  ``TrajectoryDecision``: the pair scores that joined it (every other member's, with the pair's
  measures), the threshold and the scorer's version, and a rule in words ("with S3, S9: average
  P(same thread) 0.52 ≥ 0.45; strongest S3 0.81: both Caroline; 'adoption', 'agency'; cosine 0.71").
  A segment that stays alone records its best pairs below the threshold.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import count

import numpy as np

from memsif.config import MethodSettings
from memsif.interaction.clustering import PairScorer, average_linkage, max_size, scorer_for
from memsif.interaction.pairs import PairMeasures, SegmentView, measure_pairs, segment_view
from memsif.interaction.state import InteractionState
from memsif.matching import SemanticMapping, phi
from memsif.records import Decision, TrajectoryCandidate, TrajectoryDecision, record_number

log = logging.getLogger(__name__)

#: Pairs shown for a segment that stays alone (its best, all below the threshold).
SHOWN_ALONE = 3


def latest_decisions(decisions: Iterable[Decision]) -> dict[str, TrajectoryDecision]:
    """The latest trajectory decision of each segment id (a relink records a segment again when it moved)."""
    return {d.segment_id: d for d in decisions if isinstance(d, TrajectoryDecision)}


def whole_memory(method: MethodSettings) -> bool:
    """Whether ``method`` builds Event Trajectories over the whole memory ("cluster", and "auto")."""
    return method.use_trajectories and method.trajectory_link in ("auto", "cluster")


@dataclass
class RelinkResult:
    """What one relink decided: ``groups`` (segment ids, each group one trajectory id in ``ids``), the
    segments whose trajectory changed (``moved``), the trajectories whose members changed or that are
    new (``rewritten``), the trajectory ids no segment holds any more (``retired``), one decision per
    segment whose trajectory or members changed, the scorer and the fallback note (None: the
    embedder's own scorer), and wall seconds."""

    namespace: str
    groups: list[list[str]]
    ids: list[str]
    moved: set[str]
    rewritten: set[str]
    retired: list[str]
    decisions: list[TrajectoryDecision]
    scorer: PairScorer
    note: str | None
    seconds: float
    linked: int = field(init=False)

    def __post_init__(self) -> None:
        self.linked = sum(1 for g in self.groups if len(g) > 1)

    def summary(self) -> str:
        """One line: how many trajectories hold two or more segments, what changed, and which scorer decided."""
        n = sum(len(g) for g in self.groups)
        return (f"{len(self.groups)} Event Trajectories for {n} Topical Segments, {self.linked} holding two or "
                f"more; {len(self.moved)} segments moved, {len(self.retired)} trajectories retired; "
                f"{self.scorer.version}" + (f" ({self.note})" if self.note else "") + f"; {self.seconds:.2f} s")


class Relinker:
    """Decides the Event Trajectories of a namespace's working state (module docstring).

    ``embedder``: the name of the embedder the state's vectors come from (picks the scorer); ``mapping``
    maps its cosine to s_sem for the φ shown beside each pair; ``embed``: embeds title lines, used
    only when the scorer reads ``title_cosine``; ``fact_vectors``: segment id → (k, d) embeddings of
    the CoreFacts written from it, used only when the scorer reads ``fact_cosine``."""

    def __init__(self, embedder: str, mapping: SemanticMapping, alpha: float,
                 embed: Callable[[Sequence[str]], np.ndarray] | None = None, scorer: PairScorer | None = None) -> None:
        self.scorer, self.note = scorer_for(embedder) if scorer is None else (scorer, None)
        self.mapping, self.alpha, self.embed = mapping, alpha, embed

    def views(self, state: InteractionState, fact_vectors: dict[str, np.ndarray] | None = None) -> list[SegmentView]:
        """One ``SegmentView`` per segment of ``state``, in order."""
        titles: list[np.ndarray | None] = [None] * len(state.segments)
        if "title_cosine" in self.scorer.features and self.embed is not None:
            texts = [s.record.title.text if s.record.title else "" for s in state.segments]
            vectors = self.embed([t or "-" for t in texts])
            titles = [v if t else None for v, t in zip(vectors, texts, strict=True)]
        facts = (fact_vectors or {}) if "fact_cosine" in self.scorer.features else {}
        return [segment_view(s.record.id, state.segment_messages(s), [state.vectors[m] for m in s.record.message_ids],
                             s.profile.entities, title, facts.get(s.record.id))
                for s, title in zip(state.segments, titles, strict=True)]

    def relink(self, state: InteractionState, previous: dict[str, TrajectoryDecision] | None = None,
               fact_vectors: dict[str, np.ndarray] | None = None) -> RelinkResult:
        """Group ``state``'s segments into Event Trajectories and apply the groups to ``state``.

        ``previous``: the latest trajectory decision per segment id (a segment whose trajectory and
        fellow members are unchanged gets no new decision). Raises ``ValueError`` when the state holds
        no segment.
        """
        start = time.perf_counter()
        if not state.segments:
            raise ValueError(f"namespace {state.namespace!r} holds no Topical Segment to link")
        measures = measure_pairs(self.views(state, fact_vectors))
        n = len(state.segments)
        i, j = np.triu_indices(n, 1)
        scores = np.zeros((n, n))
        if len(i):
            p = self.scorer.probabilities(measures.features(self.scorer.features, i, j))
            if not self.scorer.within_session:
                p = np.where(measures.cross[i, j], p, 0.0)
            scores[i, j] = p
            scores[j, i] = p
        alone = np.array([len(v.stems) < self.scorer.min_content for v in measures.views])
        groups = average_linkage(scores, self.scorer.threshold, max_size(n, self.scorer.max_share), alone)
        seg_ids = [s.record.id for s in state.segments]
        named = [[seg_ids[k] for k in g] for g in groups]
        before = {s.record.id: s.record.trajectory_id for s in state.segments}
        members_before = {t.record.id: list(t.record.segment_ids) for t in state.trajectories}
        ids = stable_ids(named, members_before)
        retired = sorted(set(members_before) - set(ids), key=record_number)
        state.replace_trajectories(list(zip(ids, named, strict=True)))
        rewritten = {t.record.id for t in state.trajectories if members_before.get(t.record.id) != t.record.segment_ids}
        decisions = []
        previous = previous or {}
        for g, tid in zip(groups, ids, strict=True):
            for k in g:
                members = sorted((seg_ids[o] for o in g if o != k), key=record_number)
                old = previous.get(seg_ids[k])
                if old is not None and old.trajectory_id == tid and old.link_model == self.scorer.version \
                        and _fellows(old) == members:
                    continue
                decisions.append(self._decision(state, measures, scores, g, k, tid, bool(alone[k])))
        moved = {sid for sid in seg_ids if before[sid] != state.segment(sid).record.trajectory_id}
        if self.note:
            log.warning("namespace %s: %s", state.namespace, self.note)
        return RelinkResult(state.namespace, named, ids, moved, rewritten, retired, decisions, self.scorer,
                            self.note, time.perf_counter() - start)

    def _decision(self, state: InteractionState, measures: PairMeasures, scores: np.ndarray, group: list[int],
                  k: int, trajectory_id: str, alone: bool) -> TrajectoryDecision:
        """Segment ``k``'s record: every other member of its group (or, alone, its best pairs) with the
        pair's score and measures, and the rule in words."""
        others = [o for o in group if o != k]
        shown = others or [int(o) for o in np.argsort(-scores[k]) if o != k][:SHOWN_ALONE]
        cands = [self._candidate(state, measures, scores, k, o, o in others) for o in shown]
        t = self.scorer.threshold
        sid = state.segments[k].record.id
        if others:
            mean = float(np.mean(scores[k, others]))
            best = max(cands, key=lambda c: c.link_prob or 0.0)
            rule = (f"in {trajectory_id} with {', '.join(c.segment_id or '' for c in cands)}: average P(same thread) "
                    f"{mean:.2f} with them (the group's average linkage ≥ {t:g}); strongest "
                    f"{best.segment_id} {best.link_prob:.2f}: {why_text(best)}")
        elif alone:
            rule = (f"alone in {trajectory_id}: it says fewer than {self.scorer.min_content} content words "
                    "(a greeting or a farewell), left out of the linking")
        elif cands:
            best = cands[0]
            rule = (f"alone in {trajectory_id}: no group reaches {t:g}; its best pair {best.segment_id} "
                    f"{best.link_prob:.2f}: {why_text(best)}")
        else:
            rule = f"alone in {trajectory_id}: the only segment"
        return TrajectoryDecision(namespace=state.namespace, segment_id=sid, candidates=cands,
                                  trajectory_id=trajectory_id, created=not others, rule=rule,
                                  link_model=self.scorer.version, threshold=t)

    def _candidate(self, state: InteractionState, measures: PairMeasures, scores: np.ndarray, k: int, o: int,
                   joined: bool) -> TrajectoryCandidate:
        a, b = state.segments[k], state.segments[o]
        values = {f: round(float(measures.matrices[f][k, o]), 4) for f in self.scorer.features}
        persons = sorted(set(measures.views[k].speakers) & set(measures.views[o].speakers))
        gap = float(np.expm1(measures.matrices["log_gap_days"][k, o]))
        return TrajectoryCandidate(
            trajectory_id=b.record.trajectory_id or "", segment_id=b.record.id,
            score=phi(a.profile.mean, a.profile.entities, b.profile.mean, b.profile.entities, self.alpha, self.mapping),
            rare=round(float(measures.matrices["idf_overlap"][k, o]), 4), gap_days=round(gap, 2),
            link_prob=round(float(scores[k, o]), 4), persons=persons, terms=measures.shared_terms(k, o),
            measures=values, compatible=joined)


def _fellows(d: TrajectoryDecision) -> list[str]:
    """The fellow members a decision recorded (its compatible candidates), in order."""
    return sorted((c.segment_id or "" for c in d.candidates if c.compatible), key=record_number)


def why_text(c: TrajectoryCandidate) -> str:
    """A pair's reasons in words: "both Andrew; 'Toby', 'shelter'; cosine 0.71; 12 days apart"."""
    parts = [f"both {' and '.join(c.persons)}" if c.persons else "no speaker in common"]
    if c.terms:
        parts.append(", ".join(f"'{t}'" for t in c.terms))
    parts.append(f"cosine {c.score.cosine:.2f}")
    if c.gap_days:
        parts.append(f"{c.gap_days:.0f} days apart")
    return "; ".join(parts)


def stable_ids(groups: Sequence[Sequence[str]], earlier: Mapping[str, Sequence[str]]) -> list[str]:
    """A trajectory id per group: the earlier trajectory it overlaps most (each id used once; ties: the
    larger group, then the older id), else a new id after the largest ever used (``E{n}``)."""
    member_of = {sid: tid for tid, members in earlier.items() for sid in members}
    overlaps = []
    for g, members in enumerate(groups):
        counts = Counter(member_of[sid] for sid in members if sid in member_of)
        overlaps += [(-n, -len(members), record_number(tid), g, tid) for tid, n in counts.items()]
    ids: list[str | None] = [None] * len(groups)
    taken: set[str] = set()
    for *_, g, tid in sorted(overlaps):
        if ids[g] is None and tid not in taken:
            ids[g] = tid
            taken.add(tid)
    fresh = (f"E{n}" for n in count(max((record_number(t) for t in earlier), default=0) + 1))
    return [given or next(fresh) for given in ids]
