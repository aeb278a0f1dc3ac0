"""Query-driven ActiveFact formation (§3.4): candidate clusters, Eqs. 2–4.

A candidate cluster C_k = (s_k, X_k, Q_k, R_k) holds a normalised subject, its deduplicated
statements, the distinct triggering queries (near-duplicates removed) and the ids of the distinct
historical interaction units its evidence came from. It is promoted when both

    Score_src(C_k) = (1 − 1/|R_k|) · Coh(X_k)        (Eq. 2)
    Score_qry(C_k) = (1 − 1/|Q_k|) · Coh(Q_k)        (Eq. 3)

reach their thresholds θ_s and θ_q (Eq. 4). Coh is the mean pairwise normalised cosine of a set's
embeddings ((cos + 1) / 2, in [0, 1]); a singleton's Coh is 1.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import combinations

import numpy as np

from memsif import lexical
from memsif.matching import cosine, cosine_matrix
from memsif.records import ActiveFact, CandidateCluster, Evidence, record_number, spoken_text

#: Two queries whose embeddings have cosine ≥ this are the same demand (near-duplicate removal).
QUERY_DUPLICATE_COSINE = 0.95
#: A statement whose embedding has cosine ≥ this with one already in X_k is the same statement.
STATEMENT_DUPLICATE_COSINE = 0.95


_QUESTION_START = frozenset({"what", "how", "why", "when", "where", "who", "which", "did", "do", "does", "have", "has",
                             "are", "is", "can", "could", "would", "will", "tell", "any", "keep", "let", "check"})


def is_statement(sentence: str, speakers: Sequence[str] = ()) -> bool:
    """Whether one sentence states something about the people of the conversation (§3.4: ActiveFacts
    are made of statements): not a question or advice (a question word or imperative first), not said
    to the listener ("you", or a name called out: "Wow, Caroline, that's awesome!"), spoken in the
    first person or naming someone, and holding a content word that is not greeting, thanks, praise or
    vague feeling (``lexical.EMPTY_STEMS``). Measured on the 500 labelled sentences of a conv-26 run and held
    out on conv-30 (``benchmarks/quality/active_fact_statements.py``)."""
    text = spoken_text(sentence).strip()
    words = lexical.words(text)
    if not words or text.endswith("?"):
        return False
    lower = {w.lower for w in words}
    if words[0].lower in _QUESTION_START:  # a question without its mark, or advice ("Keep it up!")
        return False
    names = {n for sp in speakers for n in sp.lower().split()}

    def is_name(word: lexical.Word) -> bool:  # a speaker, their nickname ("Mel"), or a capitalised word mid-sentence
        if any(len(word.lower) >= 3 and n.startswith(word.lower) for n in names):
            return True
        return (word.text[:1].isupper() and word.text[1:].islower() and not word.is_sent_start
                and word.lower not in lexical.FIRST_PERSON)

    named = any(is_name(w) for w in words)
    if not lower & lexical.FIRST_PERSON and not named:
        return False
    if lower & lexical.SECOND_PERSON:  # said to the listener: praise, advice, thanks ("I'm so proud of you")
        return False
    if any((k < 3 and re.search(rf"\b{re.escape(w.text)}\s*[,!]", text))
           or re.search(rf",\s*{re.escape(w.text)}\s*[.!]*$", text)
           for k, w in enumerate(words) if is_name(w)):
        return False  # a name called out ("Wow, Caroline, that painting is awesome!", "Hey Mel, long time!")
    content = [w for w in words if w.is_alpha and not w.is_stop and len(w.lower) > 1 and not is_name(w)]
    return any(w.stem not in lexical.EMPTY_STEMS and w.lower not in lexical.EMPTY_STEMS for w in content)


def stated(text: str, speakers: Sequence[str] = ()) -> str:
    """The sentences of ``text`` that are statements (:func:`is_statement`), joined; "" when none is."""
    parts = re.split(r"(?<=[.!?…])\s+", " ".join(spoken_text(text).split()))  # every sentence, short ones too
    return " ".join(p for p in parts if p and is_statement(p, speakers))


def normalise_subject(subject: str) -> str:
    """Subjects are compared lower-cased with single spaces and no surrounding punctuation."""
    return " ".join(subject.strip().strip(".,;:!?\"'").lower().split())


def coherence(vectors: Sequence[np.ndarray]) -> float:
    """Coh: mean pairwise normalised cosine ((cos+1)/2) of (d,) vectors; 1.0 for 0 or 1 vectors."""
    if len(vectors) < 2:
        return 1.0
    return float(np.mean([(cosine(a, b) + 1.0) / 2.0 for a, b in combinations(vectors, 2)]))


def score_src(n_sources: int, statement_vectors: Sequence[np.ndarray]) -> float:
    """Eq. 2: (1 − 1/|R_k|) · Coh(X_k). Zero when the cluster has fewer than one source."""
    if n_sources < 1:
        return 0.0
    return (1.0 - 1.0 / n_sources) * coherence(statement_vectors)


def score_qry(query_vectors: Sequence[np.ndarray]) -> float:
    """Eq. 3: (1 − 1/|Q_k|) · Coh(Q_k). Zero without queries."""
    if not query_vectors:
        return 0.0
    return (1.0 - 1.0 / len(query_vectors)) * coherence(query_vectors)


def promote(src: float, qry: float, theta_src: float, theta_qry: float) -> bool:
    """Eq. 4: promoted only when the cluster is both historically supported and repeatedly demanded."""
    return src >= theta_src and qry >= theta_qry


def new_cluster(cluster_id: str, namespace: str, subject: str) -> CandidateCluster:
    """An empty C_k about ``subject`` (normalised by the caller)."""
    return CandidateCluster(id=cluster_id, namespace=namespace, subject=subject)


def add_evidence(cluster: CandidateCluster, statement: str, statement_vector: np.ndarray, sources: Sequence[str],
                 query: str, query_vector: np.ndarray, topics: Sequence[str] = (),
                 time: datetime | None = None) -> None:
    """Accumulate one evidence entry into ``cluster`` (after the answer, §3.4): dedupe statements, drop
    near-duplicate queries, union distinct sources, count the statement's topics; then refresh the
    label and the scores of Eqs. 2–3. ``time`` is the date of the statement's source turn."""
    if not any(cosine(statement_vector, v) >= STATEMENT_DUPLICATE_COSINE for v in cluster.statement_vectors):
        cluster.statements.append(statement)
        cluster.statement_vectors.append(np.asarray(statement_vector, dtype=np.float32))
        cluster.statement_sources.append(list(sources))
        cluster.statement_times.append(time)
        for topic in topics:
            cluster.topics[topic] = cluster.topics.get(topic, 0) + 1
    if not any(cosine(query_vector, v) >= QUERY_DUPLICATE_COSINE for v in cluster.query_vectors):
        cluster.queries.append(query)
        cluster.query_vectors.append(np.asarray(query_vector, dtype=np.float32))
    cluster.sources += [source for source in dict.fromkeys(sources) if source not in cluster.sources]
    refresh(cluster)


def refresh(cluster: CandidateCluster) -> None:
    """Recompute the derived fields of ``cluster``: s_k's label, Score_src (Eq. 2), Score_qry (Eq. 3) and
    the most central statement."""
    top = sorted(cluster.topics, key=lambda t: (-cluster.topics[t], t))[:2]
    cluster.label = f"{cluster.subject}: {', '.join(top)}" if top else cluster.subject
    cluster.score_src = score_src(len(cluster.sources), cluster.statement_vectors)
    cluster.score_qry = score_qry(cluster.query_vectors)
    cluster.central_statement = central_statement(cluster) if cluster.statements else None


def compatibility(cluster: CandidateCluster, statement_vector: np.ndarray) -> float:
    """The lowest cosine of a statement with every statement of X_k (complete link: a statement joins
    only when it fits the cluster as a whole, so unrelated statements never chain through a third)."""
    if not cluster.statement_vectors:
        return 1.0
    return min(cosine(statement_vector, v) for v in cluster.statement_vectors)


def is_promoted(cluster: CandidateCluster, theta_src: float, theta_qry: float) -> bool:
    """Eq. 4 on the cluster's current scores."""
    return promote(cluster.score_src, cluster.score_qry, theta_src, theta_qry)


#: A promoted statement is replaced only by a member more central by at least this (mean cosine).
STATEMENT_SWITCH_MARGIN = 0.05


def centrality(cluster: CandidateCluster) -> np.ndarray:
    """(|X_k|,) mean cosine of each statement with the others (1.0 for a single statement)."""
    if len(cluster.statements) == 1:
        return np.ones(1)
    sims = cosine_matrix(np.stack(cluster.statement_vectors))
    out: np.ndarray = (sims.sum(axis=1) - 1.0) / (len(sims) - 1)
    return out


def central_statement(cluster: CandidateCluster) -> str:
    """The statement of X_k closest on average to the others."""
    return cluster.statements[int(np.argmax(centrality(cluster)))]


def choose_statement(cluster: CandidateCluster) -> str:
    """The ActiveFact statement, chosen from X_k and stable: the promoted one stays unless another
    member is more central by ``STATEMENT_SWITCH_MARGIN`` (a new question must not flip it)."""
    best = central_statement(cluster)
    if cluster.statement in cluster.statements:
        cent = centrality(cluster)
        current = cent[cluster.statements.index(cluster.statement)]
        if cent[cluster.statements.index(best)] - current < STATEMENT_SWITCH_MARGIN:
            return cluster.statement
    return best


@dataclass
class Accumulation:
    """What one answer's evidence did to the ActiveFact track: the clusters it touched (updated
    copies, with their ActiveFact ids) and the ActiveFacts promoted or updated (new records)."""

    clusters: list[CandidateCluster] = field(default_factory=list)
    active_facts: list[tuple[ActiveFact, np.ndarray]] = field(default_factory=list)


@dataclass(frozen=True)
class Observed:
    """One evidence entry of an answer, as accumulation reads it: the entry, its (d,) statement
    embedding and its key-entity topics."""

    evidence: Evidence
    vector: np.ndarray
    topics: Sequence[str]


@dataclass(frozen=True)
class Thresholds:
    """θ_s and θ_q of Eq. 4, and the cosine an entry needs with *every* statement of a cluster of its
    subject to join it ("compatible with the accumulated statements", §3.4; complete link)."""

    theta_src: float
    theta_qry: float
    compatible_cosine: float


def accumulate(clusters: Sequence[CandidateCluster], active: Sequence[ActiveFact], observed: Sequence[Observed],
               question: str, query_vector: np.ndarray, thresholds: Thresholds, now: datetime,
               namespace: str) -> Accumulation:
    """Post-answer candidate accumulation and promotion (§3.4, Eqs. 2–4), without side effects.

    Each observed evidence entry joins the cluster of its normalised subject whose every statement has
    cosine ≥ ``thresholds.compatible_cosine`` with it (the most compatible one), or opens a new cluster.
    Touched clusters that pass Eq. 4 become ActiveFacts (new id, or their existing one updated,
    ``promoted_at`` kept; one a person deleted stays deleted); the statement is
    :func:`choose_statement`'s. The inputs are left unchanged."""
    working = {c.id: c for c in clusters}
    touched: dict[str, CandidateCluster] = {}
    for ev, vec, topic in ((o.evidence, o.vector, o.topics) for o in observed):
        subject = normalise_subject(ev.subject)
        fits = {cid: f for cid, c in working.items()
                if c.subject == subject and (f := compatibility(c, vec)) >= thresholds.compatible_cosine}
        if fits:
            target = max(fits, key=lambda cid: fits[cid])
        else:
            target = f"C{len(working) + 1}"
            working[target] = new_cluster(target, namespace, subject)
        if target not in touched:
            working[target] = touched[target] = working[target].model_copy(deep=True)
        add_evidence(touched[target], ev.statement, vec, ev.source_message_ids, question, query_vector, topic,
                     ev.time)
    by_id = {a.id: a for a in active}
    out = Accumulation()
    for cid in sorted(touched, key=record_number):
        cluster = touched[cid]
        out.clusters.append(cluster)
        if not is_promoted(cluster, thresholds.theta_src, thresholds.theta_qry):
            continue
        aid = cluster.active_fact_id or f"A{len(by_id) + len(out.active_facts) + 1}"
        if aid in by_id and by_id[aid].status == "deleted":
            continue  # a person deleted it: its cluster still gathers evidence, and is not promoted again
        statement = cluster.statement = choose_statement(cluster)
        k = cluster.statements.index(statement)
        previous = by_id.get(aid)
        fact = ActiveFact(id=aid, namespace=namespace, subject=cluster.label, statement=statement,
                          source_message_ids=cluster.statement_sources[k] or cluster.sources,
                          supporting_message_ids=cluster.sources, queries=cluster.queries, cluster_id=cid,
                          score_src=cluster.score_src, score_qry=cluster.score_qry,
                          event_time=cluster.statement_times[k],
                          promoted_at=previous.promoted_at if previous else now, updated_at=now)
        cluster.active_fact_id = aid
        out.active_facts.append((fact, cluster.statement_vectors[k]))
    return out
