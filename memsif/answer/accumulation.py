"""Post-answer accumulation (§3.4, Eqs. 2–4): the evidence an answer used joins the ActiveFact candidate
clusters, which are promoted when they pass θ_s and θ_q."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from memsif.backends import Backends
from memsif.entities import EntityExtractor
from memsif.facts.active import Observed, Thresholds, accumulate, normalise_subject, stated
from memsif.records import Evidence


@dataclass
class Accumulated:
    """What one answer's evidence did: the ActiveFacts promoted or updated, the clusters it joined, and
    why nothing was added (a read-only store), if so."""

    active_facts_changed: list[str] = field(default_factory=list)
    clusters_touched: list[str] = field(default_factory=list)
    error: str | None = None


class EvidenceAccumulator:
    """Adds an answer's evidence to the namespace's candidate clusters (``run``)."""

    def __init__(self, backends: Backends, entities: EntityExtractor | None) -> None:
        self.config, self.store, self.embedder = backends.config, backends.store, backends.embedder
        self.entities = entities

    def run(self, namespace: str, question: str, qv: np.ndarray, evidence: list[Evidence]) -> Accumulated:
        """Post-answer candidate accumulation and promotion (§3.4, Eqs. 2–4; ``facts.active.accumulate``):
        keep of each evidence entry only the sentences that state something about people
        (``facts.active.stated``: no question, greeting, thanks or praise), load the clusters, embed the
        evidence and find its topics, accumulate, save. A read-only store
        keeps its clusters as they are (said in ``Accumulated.error``)."""
        cfg = self.config.method
        if self.store.read_only:
            return Accumulated(error=f"the memory at {self.store.location} is open read-only (a read-only folder, "
                                     "or a snapshot while another process holds it): this question's evidence was not "
                                     "added to the ActiveFact clusters")
        speakers = self.store.speakers(namespace)
        evidence = [e.model_copy(update={"statement": said}) for e in evidence
                    if (said := stated(e.statement, speakers))]  # statements only: no question, greeting or praise
        if not evidence:
            return Accumulated()
        clusters = self.store.clusters(namespace)
        vectors = self.embedder.embed_documents([e.statement for e in evidence])
        names = {n for c in clusters for n in c.subject.split()}
        names |= {w for e in evidence for w in normalise_subject(e.subject).split()}
        topics = ([sorted(t - names) for t in self.entities.extract([e.statement for e in evidence])]
                  if self.entities is not None else [[] for _ in evidence])
        done = accumulate(clusters, self.store.active_facts(namespace),
                          [Observed(e, v, t) for e, v, t in zip(evidence, vectors, topics, strict=True)], question, qv,
                          Thresholds(cfg.theta_src, cfg.theta_qry, cfg.active_compatible_cosine),
                          datetime.now(UTC).replace(tzinfo=None), namespace)
        self.store.put_clusters(namespace, done.clusters)
        self.store.put_active_facts(namespace, done.active_facts)
        return Accumulated([a.id for a, _ in done.active_facts], [c.id for c in done.clusters])
