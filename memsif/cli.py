"""Command line: ``python -m memsif ingest|relink|upgrade|show|ask|facts|calibrate|eval|bench ...``
(``--help`` on each)."""

from __future__ import annotations

import argparse
import json
import logging
import resource
import sys
import time
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memsif.config import MemSIFConfig
from memsif.errors import MemSIFError
from memsif.io.transcripts import FORMATS as TRANSCRIPT_FORMATS
from memsif.llm import described, runtime_of
from memsif.timeparse import parse_time

if TYPE_CHECKING:
    from memsif.records import SegmentDecision


def config_for(args: argparse.Namespace, **overrides: Any) -> MemSIFConfig:
    """The configuration a command runs with: ``MEMSIF_*`` variables, then the command's own options
    (``--model`` for every step, ``--data-dir``), then ``overrides``. The environment is only read."""
    return MemSIFConfig.from_env(data_dir=getattr(args, "data_dir", None), llm_model=getattr(args, "model", None),
                                 **overrides)


def _engine(args: argparse.Namespace, reader: bool = False, **overrides: Any):
    """The engine a command runs on. A ``reader`` (show, ask, facts, export, namespaces, calibrate) reads a
    snapshot of the memory folder taken as it starts, read-only, and says so on stderr: it never holds the
    folder, so an ingest or the app can start while it runs. A writer whose folder another MemSIF process
    holds is refused with what to do."""
    from memsif.engine import MemSIF
    from memsif.store import open_store

    config = config_for(args, **overrides)
    if not reader or config.store.qdrant_url:
        return MemSIF(config)
    store = open_store(config, when_busy="read")
    print(f"reading {store.opened_from or f'the memory folder {store.location}'}", file=sys.stderr)
    return MemSIF(config, store=store)


def _progress_bar(desc: str):
    """A progress callback drawing one tqdm bar per stage (segments, then core facts) on stderr."""
    from tqdm import tqdm

    bars: dict[str, Any] = {}

    def update(done: int, total: int, stage: str) -> None:
        if stage not in bars:
            for other in bars.values():
                other.close()
            unit = "msg" if stage == "segments" else "batch"
            bars[stage] = tqdm(total=total, desc=f"{desc} {stage}", unit=unit, file=sys.stderr, leave=False)
        bar = bars[stage]
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return update


def cmd_ingest(args: argparse.Namespace) -> int:
    from memsif.io import as_memories, load_transcripts

    transcripts = as_memories(load_transcripts(args.path, sample=args.sample, format=args.format,
                                               include_do_not_remember=args.include_do_not_remember))
    for tr in transcripts:
        for warning in tr.warnings:
            print(f"warning: {tr.sample_id}: {warning}", file=sys.stderr)
    engine = _engine(args)
    load_s = engine.load_models()
    reports = []
    for tr in transcripts:
        report = engine.ingest_transcript(tr, namespace=args.namespace or tr.sample_id,
                                          progress=None if args.no_progress else _progress_bar(tr.sample_id),
                                          core_facts=False if args.no_facts else None, replace=args.replace)
        for note in [*report.warnings, *([report.trajectory_note] if report.trajectory_note else [])]:
            print(f"note: {report.namespace}: {note}", file=sys.stderr)
        reports.append(report.to_dict())
        if not args.json:
            judged = report.judge_calls_segment / max(report.messages, 1)
            print(f"{report.namespace}: {report.messages} new messages ({report.skipped} already stored), "
                  f"{report.segments} Topical Segments, {report.trajectories} Event Trajectories; "
                  f"segment judge on {report.judge_calls_segment} messages ({judged:.0%}), "
                  f"trajectory judge {report.judge_calls_trajectory} calls; {report.core_facts} CoreFacts "
                  f"(operations {report.fact_ops or '-'}, {report.fact_errors} errors); {report.seconds:.1f} s")
    engine.close()
    summary = dict(reports[0]) if len(reports) == 1 else {
        "namespace": ",".join(r["namespace"] for r in reports),
        **{k: sum(r[k] for r in reports) for k in ("messages", "skipped", "segments", "trajectories",
                                                    "judge_calls_segment", "judge_calls_trajectory",
                                                    "judge_errors", "seconds", "core_facts", "fact_errors")},
        "fact_ops": {op: sum(r["fact_ops"].get(op, 0) for r in reports)
                     for op in sorted({op for r in reports for op in r["fact_ops"]})},
        "samples": reports,
    }
    summary.update(judge_share_segment=summary["judge_calls_segment"] / max(summary["messages"], 1),
                   model_load_seconds=load_s, llm=described(engine.llm),
                   peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # MiB; Linux says KiB
                   data_dir=str(engine.config.store.resolved_data_dir))
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"model {engine.llm.name} on {runtime_of(engine.llm).line()}")
        if warning := runtime_of(engine.llm).warning():
            print(f"warning: {warning}", file=sys.stderr)
        print(f"models loaded in {load_s:.1f} s; peak memory {summary['peak_rss_mb']:.0f} MiB; "
              f"memory in {summary['data_dir']}")
    return 0


def cmd_reembed(args: argparse.Namespace) -> int:
    """Rebuild every namespace of an old store (built with another embedder) into the configured
    store with the configured embedder: messages are read from the old store as they are (no
    embedder needed to read them) and ingested again; segments, trajectories and CoreFacts are
    recomputed, because φ depends on the embeddings."""
    from pathlib import Path

    from memsif.store import MemoryStore

    old_path = Path(args.source).expanduser()
    old_store = MemoryStore(path=old_path / "qdrant" if (old_path / "qdrant").exists() else old_path)
    engine = _engine(args)
    if Path(engine.store.location).resolve() == Path(old_store.location).resolve():
        raise MemSIFError("--from and --data-dir are the same folder; re-embed into a new folder.")
    wanted = args.namespace or old_store.namespaces()
    for ns in wanted:
        messages = [row.message for row in old_store.messages(ns, with_vectors=False)]
        report = engine.ingest(messages, namespace=ns, core_facts=False if args.no_facts else None,
                               progress=None if args.no_progress else _progress_bar(ns))
        print(f"{ns}: {report.messages} messages re-embedded with {engine.embedder.name}; "
              f"{report.segments} Topical Segments, {report.trajectories} Event Trajectories, "
              f"{report.core_facts} CoreFacts")
    old_store.close()
    engine.close()
    return 0


def cmd_upgrade(args: argparse.Namespace) -> int:
    """Bring a store made by an earlier MemSIF up to date in place: add the hybrid sentence index
    (dense + sparse lexical vectors) for every message that lacks it, each sentence's Event
    Trajectory id where it lacks it, and the lexical terms of sentences this version reads
    differently. Running it twice does nothing the second time."""
    engine = _engine(args)
    wanted = args.namespace or engine.namespaces()
    if not wanted:
        print(f"no namespaces in {engine.store.location}: nothing to upgrade")
    from memsif.upgrade import STEPS

    for ns in wanted:
        changed = engine.upgrade(ns)
        for step in STEPS:
            if changed[step.name]:
                print(f"{ns}: {step.says.format(n=changed[step.name])}")
        if not any(changed.values()):
            print(f"{ns}: up to date")
    engine.close()
    return 0


def _accumulate_in_folder(args: argparse.Namespace, reader: Any, result: Any) -> None:
    """An answer read from a snapshot adds its evidence to the ActiveFact clusters (§3.4) in the memory
    folder itself, which is held only for that write; a folder another MemSIF process holds keeps its
    clusters as they are, and the answer's trace says so."""
    from memsif.engine import MemSIF
    from memsif.errors import StoreError
    from memsif.store import open_store

    if not reader.store.read_only or not result.evidence_used:
        return
    try:
        store = open_store(reader.config)
    except StoreError as exc:
        result.errors.append(f"this question's evidence was not added to the ActiveFact clusters: {exc}")
        return
    try:
        MemSIF(reader.config, llm=reader.llm, embedder=reader.embedder, entities=reader.entity_extractor,
               store=store).accumulate(result, namespace=args.namespace)
    finally:
        store.close()


def cmd_ask(args: argparse.Namespace) -> int:
    from memsif.llm import reading_reported
    from memsif.viz import evidence_how

    engine = _engine(args, reader=True)
    with reading_reported(lambda reading: print(reading.text(), file=sys.stderr, flush=True)):  # the wait, said
        result = engine.ask(args.question, namespace=args.namespace, question_date=args.date, accumulate=False)
    _accumulate_in_folder(args, engine, result)
    out = result.to_dict()
    if args.json:
        print(json.dumps(out))
        return 0
    print(result.answer or "(empty answer)")
    if result.backend_warning:
        print(f"  warning: {result.backend_warning}")
    if result.model_at_chance:
        print(f"  warning: answered by {result.model}, the packaged demo model (at chance on the engine's checks): "
              "unreliable; set MEMSIF_LLM_MODEL or MEMSIF_LLM_BACKEND=openai for a bigger model")
    if result.unsupported_mentions:
        print(f"  warning: not in the context it was given: {', '.join(result.unsupported_mentions)}")
    if result.premise_mentions:
        print(f"  note: taken from the question, not confirmed by its context: {', '.join(result.premise_mentions)}")
    if result.when_rule:
        print(f"  note: {result.when_rule}")
    verdict = "n/a" if result.sufficiency_prob is None else f"{result.sufficiency_prob:.2f}"
    print(f"\n  sufficient: {result.sufficient} (P={verdict}); traced back to Structured Interaction "
          f"Memory: {result.traced_back}; tokens {result.tokens_in} in / {result.tokens_out} out; "
          f"{result.seconds:.1f} s")
    for f in result.facts_used:
        print(f"  fact {f.id} [{f.kind}{', subject' if f.found_by == 'subject' else ''}] {f.subject}: {f.statement} "
              f"({', '.join(f.source_message_ids)})")
    for what, rule in (("question", result.aggregation_rule), ("sufficiency gate", result.gate_rule),
                       ("relevance", result.relevance_rule), ("answer check", result.answer_check_rule)):
        if rule:
            print(f"  {what}: {rule}")
    for e in result.evidence_used:
        print(f"  evidence {', '.join(e.source_message_ids)} [{evidence_how(e)}] "
              f"{e.subject}: {e.statement[:160]}")
    for err in result.errors:
        print(f"  error: {err}")
    return 0


def cmd_facts(args: argparse.Namespace) -> int:
    if args.action != "list":
        return _correct_fact(args)
    engine = _engine(args, reader=True)
    facts = engine.facts(args.namespace, history=args.history)
    if args.json:
        print(json.dumps({"namespace": args.namespace,
                          "facts": [f.model_dump(mode="json") for f in facts],
                          "operations": [op.model_dump(mode="json") for op in engine.fact_log(args.namespace)]
                          if args.log else None}))
        return 0
    print(f"namespace {args.namespace}: {len(facts)} CoreFacts" + (" (with history)" if args.history else ""))
    for f in facts:
        when = f.event_time.date().isoformat() if f.event_time else "undated"
        status = {"current": "", "deleted": f"  [deleted by a person on {f.valid_until}]"}.get(
            f.status, f"  [superseded by {f.superseded_by} on {f.valid_until}]")
        status += "  (corrected by a person)" if f.corrected else ""
        about = f"about {f.attribute}; " if f.attribute else ""
        print(f"  {f.id:>5} {f.type:<10} {f.subject}: {f.statement}  ({about}{when}; "
              f"{', '.join(f.source_message_ids)}){status}")
    if args.log:
        for op in engine.fact_log(args.namespace):
            print(f"  #{op.seq:<4} {op.op:<9} {','.join(op.fact_ids) or '-':<8} {op.decided_by:<4} "
                  f"{'(second pass) ' if op.extraction_pass == 2 else ''}{op.reason}"
                  f"{'  ERROR ' + op.error if op.error else ''}")
    return 0


def _correct_fact(args: argparse.Namespace) -> int:
    """``facts edit|delete|restore``: one correction of a person, said as its operation."""
    if not args.fact_id:
        raise MemSIFError(f"facts {args.action} needs the fact's id, e.g. 'facts {args.action} --namespace "
                          f"{args.namespace} F12' (ids: 'facts --namespace {args.namespace}').")
    given = {k: getattr(args, k) for k in ("statement", "subject", "type", "when") if getattr(args, k) is not None}
    if args.action != "edit" and given:
        raise MemSIFError(f"--{', --'.join(given)} belong to 'facts edit'; 'facts {args.action}' takes only the id.")
    engine = _engine(args)
    if args.action == "edit":
        when = None
        if args.when is not None:
            try:
                when = parse_time(args.when)
            except ValueError as exc:
                raise MemSIFError(f"--when {args.when!r} is not a date ({exc}): give e.g. 2023-05-08.") from exc
        op = engine.edit_fact(args.namespace, args.fact_id, statement=args.statement, subject=args.subject,
                              type=args.type, when=when)
    else:  # delete_fact or restore_fact
        op = getattr(engine, f"{args.action}_fact")(args.namespace, args.fact_id)
    if args.json:
        print(json.dumps(op.model_dump(mode="json")))
    else:
        print(f"{op.op} {', '.join(op.fact_ids)} (#{op.seq}): {op.reason}")
    return 0


def cmd_relink(args: argparse.Namespace) -> int:
    """Decide a stored memory's Event Trajectories again over the whole memory (``MemSIF.relink``)."""
    engine = _engine(args)
    result = engine.relink(args.namespace)
    print(f"{args.namespace}: {result.summary()}")
    if args.verbose:
        by_id = {s.id: s for s in engine.segments(args.namespace)}
        for tid, group in zip(result.ids, result.groups, strict=True):
            if len(group) > 1:
                titles = "; ".join(dict.fromkeys(by_id[g].title.text for g in group
                                                 if by_id[g].title and by_id[g].title.lines))
                sessions = sorted({x for g in group for x in by_id[g].session_ids},  # by the number in the id
                                  key=lambda sid: (int("".join(filter(str.isdigit, sid)) or 0), sid))
                print(f"  {tid}: {', '.join(group)} (sessions {', '.join(sessions)}) {titles}")
    engine.close()
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from memsif.transfer import write_export

    engine = _engine(args, reader=True)
    data = engine.export_namespace(args.namespace, decimals=args.decimals)
    path = write_export(data, args.out)
    print(f"{args.namespace}: {len(data.messages)} messages, {len(data.segments)} Topical Segments, "
          f"{len(data.facts)} CoreFacts, {len(data.clusters)} candidate clusters written to {path} "
          f"({path.stat().st_size / 2**20:.1f} MiB)")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from memsif.transfer import read_export

    with warnings.catch_warnings(record=True) as caught:  # each said in one line (fields left out of a newer export)
        warnings.simplefilter("always")
        data = read_export(args.path)
    for w in caught:
        print(f"warning: {args.path}: {w.message}", file=sys.stderr)
    engine = _engine(args)
    ns = engine.import_namespace(data, args.namespace)
    print(f"{ns}: {len(data.messages)} messages, {len(data.segments)} Topical Segments, "
          f"{len(data.facts)} CoreFacts imported into {engine.config.store.resolved_data_dir}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    engine = _engine(args, reader=True)
    ns = args.namespace
    segments = engine.segments(ns)
    trajectories = engine.trajectories(ns)
    decisions = {d.message_id: d for d in engine.decisions(ns, "segment")}
    if args.json:
        boundaries = {mid: d.model_dump(mode="json") for mid, d in decisions.items()}
        print(json.dumps({
            "namespace": ns,
            "segments": [{**s.model_dump(mode="json"),
                          "boundary": boundaries.get(s.message_ids[0])} for s in segments],
            "trajectories": [t.model_dump(mode="json") for t in trajectories],
        }))
        return 0
    print(f"namespace {ns}: {len(segments)} Topical Segments, {len(trajectories)} Event Trajectories")
    for s in segments:
        d = decisions.get(s.message_ids[0])
        how = str(d.rule) if d else "?"
        if d and d.judge_prob is not None:
            how += f" p(continue)={d.judge_prob:.2f}"
        if d and d.score:
            how += f" φ={d.score.phi:.3f}"
        ids = s.message_ids
        span = f"{ids[0]}..{ids[-1]}" if len(ids) > 1 else ids[0]
        print(f"  {s.id:>5} [{s.trajectory_id}] {len(ids):3d} msgs {span:<16} opened by {how}")
    for t in trajectories:
        print(f"  {t.id:>5}: {' '.join(t.segment_ids)}")
    return 0


def phi_distribution(decisions: list[SegmentDecision], config: MemSIFConfig, embedder_name: str) -> dict[str, Any]:
    """Percentiles of cos(u_t, S_i) and of φ under each s_sem mapping, with the share of messages
    each mapping sends to the split rule, the judge and the merge rule (paper thresholds)."""
    import numpy as np

    from memsif.matching import SemanticMapping

    scored = [d.score for d in decisions if d.score]
    cos = np.array([s.cosine for s in scored])
    jac = np.array([s.jaccard for s in scored])
    qs = (5, 25, 50, 75, 95)

    def percentiles(values: np.ndarray) -> dict[str, float]:
        return {f"p{q}": round(float(np.percentile(values, q)), 3) for q in qs}

    result: dict[str, Any] = {"n": len(cos), "embedder": embedder_name, "cosine": percentiles(cos),
                              "jaccard_mean": round(float(jac.mean()), 4), "mappings": {}}
    for kind in ("affine", "calibrated"):
        try:
            mapping = SemanticMapping.for_embedder(embedder_name, kind)
        except ValueError:
            continue
        alpha = config.method.alpha_segment
        phi = alpha * np.array([mapping(c) for c in cos]) + (1 - alpha) * jac
        result["mappings"][kind] = {
            "range": [mapping.low, mapping.high], "phi": percentiles(phi),
            "split_rule": round(float((phi <= config.method.tau_split).mean()), 3),
            "judge": round(float(((phi > config.method.tau_split) & (phi < config.method.tau_merge)).mean()), 3),
            "merge_rule": round(float((phi >= config.method.tau_merge).mean()), 3),
        }
    return result


def cmd_namespaces(args: argparse.Namespace) -> int:
    """Every namespace in the memory folder (or server) with its messages, Topical Segments, Event
    Trajectories and current CoreFacts."""
    engine = _engine(args, reader=True)
    store = engine.store  # counted in the store, not read record by record
    rows = [{"namespace": ns, "messages": store.count("message", ns), "segments": store.count("segment", ns),
             "trajectories": store.count("trajectory", ns), "core_facts": len(engine.facts(ns))}
            for ns in engine.namespaces()]
    if args.json:
        print(json.dumps({"location": engine.store.location, "namespaces": rows}))
        return 0
    print(f"{len(rows)} namespace{'s' * (len(rows) != 1)} in {engine.store.location}")
    for r in rows:
        print(f"  {r['namespace']}: {r['messages']} messages, {r['segments']} Topical Segments, "
              f"{r['trajectories']} Event Trajectories, {r['core_facts']} CoreFacts")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Distribution of φ over the boundary decisions already stored in a namespace."""
    engine = _engine(args, reader=True)
    decisions = [d for ns in args.namespace for d in engine.decisions(ns, "segment")]
    result = phi_distribution(decisions, engine.config, engine.embedder.name)
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


class _CommandParser(argparse.ArgumentParser):
    """A sub-command's parser that reads its positionals wherever they stand among its options, so
    ``facts edit --namespace NS F21`` parses as ``facts edit F21 --namespace NS`` does (plain argparse fills
    every positional from the first run of them and leaves ``F21`` unrecognised). A parser of sub-commands
    (``eval``) parses as argparse does; its sub-commands are of this class too."""

    _mixing = False

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def, override]
        if self._mixing or any(a.nargs == argparse.PARSER for a in self._actions):  # its own passes; a group
            return super().parse_known_args(args, namespace)
        self._mixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._mixing = False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m memsif", description="MemSIF long-term memory engine.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the engine does")
    parser.add_argument("--model", help="the LLM for every step: packaged:qwen2.5-coder-1.5b-instruct (default), "
                        "packaged:smollm2-135m-instruct, a hub id or a local path (same as MEMSIF_LLM_MODEL)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_CommandParser)
    _building_parsers(sub)
    _reading_parsers(sub)
    from memsif.eval.cli import add_parsers

    add_parsers(sub)
    return parser


#: Options several commands take alike, added by ``_command`` in the order it is given them.
_SHARED: dict[str, dict[str, Any]] = {"--namespace": {"required": True}, "--data-dir": {},
                                      "--json": {"action": "store_true"}}


def _command(sub: argparse._SubParsersAction, name: str, func: Any, help: str, *shared: str) -> argparse.ArgumentParser:
    """The sub-command ``name`` running ``func``, with the ``_SHARED`` options named in ``shared``."""
    p = sub.add_parser(name, help=help)
    p.set_defaults(func=func)
    for flag in shared:
        p.add_argument(flag, **_SHARED[flag])
    return p


def _building_parsers(sub: argparse._SubParsersAction) -> None:
    """ingest, reembed, upgrade, export and import: the commands that write memory or move it."""
    p = _command(sub, "ingest", cmd_ingest, "build Structured Interaction Memory from a transcript")
    p.add_argument("path", help="transcript: LoCoMo or LongMemEval JSON, a ChatGPT or Claude export "
                   "(conversations.json or its ZIP), a Telegram, Discord, Messenger, Instagram or Slack export, an "
                   "OpenAI message list, JSONL, a chat log (WhatsApp, or its ZIP), or plain text")
    p.add_argument("--format", default="auto", choices=["auto", *TRANSCRIPT_FORMATS],
                   help="read the file as this format (default: detected from the content)")
    p.add_argument("--sample", help="only this sample id (default: every sample in the file; the conversations "
                   "of a ChatGPT or Claude export are one history)")
    p.add_argument("--namespace", help="store under this namespace (default: the sample id; an export's file name)")
    p.add_argument("--include-do-not-remember", action="store_true", help="also ingest the conversations their "
                   "person marked do-not-remember (left out by default, with a warning)")
    p.add_argument("--replace", action="store_true", help="the file is a corrected version of what the memory "
                   "holds: stored messages take its version and the memory is rebuilt")
    p.add_argument("--data-dir", help="memory folder (default: $MEMSIF_DATA_DIR or ~/.local/share/memsif)")
    p.add_argument("--json", action="store_true", help="last stdout line is one JSON summary")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--no-facts", action="store_true", help="Structured Interaction Memory only, no CoreFacts")

    p = _command(sub, "reembed", cmd_reembed, "rebuild a store made with another embedder into a new folder")
    p.add_argument("--from", dest="source", required=True, help="the old memory folder (its MEMSIF_DATA_DIR)")
    p.add_argument("--data-dir", required=True, help="the new memory folder (empty, or for this embedder)")
    p.add_argument("--namespace", action="append", help="only these namespaces (repeat; default: all)")
    p.add_argument("--no-facts", action="store_true", help="Structured Interaction Memory only, no CoreFacts")
    p.add_argument("--no-progress", action="store_true")

    p = _command(sub, "upgrade", cmd_upgrade, "bring a store made by an earlier MemSIF up to date (adds the sentence "
                 "index for hybrid retrieval; nothing stored changes)")
    p.add_argument("--data-dir", help="memory folder (default: $MEMSIF_DATA_DIR or ~/.local/share/memsif)")
    p.add_argument("--namespace", action="append", help="only these namespaces (repeat; default: all)")

    p = _command(sub, "relink", cmd_relink, "decide a stored memory's Event Trajectories again over the whole memory "
                 "(the fitted pair score and average linkage; corrections are kept)", "--namespace", "--data-dir")
    p.add_argument("--verbose", "-v", action="store_true", help="list the trajectories of two or more segments")

    p = _command(sub, "export", cmd_export, "write a namespace's whole memory (vectors and logs included) to a file",
                 "--namespace", "--data-dir")
    p.add_argument("out", help="the file to write (.json, or .json.gz for gzip)")
    p.add_argument("--decimals", type=int, help="round vector components to this many decimals (4 makes the "
                   "file about a third of the size; default: exact)")

    p = _command(sub, "import", cmd_import, "read a file written by export into a namespace that holds no memory")
    p.add_argument("path")
    p.add_argument("--namespace", help="import under this namespace (default: the one it was exported from)")
    p.add_argument("--data-dir")


def _reading_parsers(sub: argparse._SubParsersAction) -> None:
    """namespaces, show, ask, facts and calibrate: the commands that read memory (they read a snapshot
    while another MemSIF process holds the folder)."""
    _command(sub, "namespaces", cmd_namespaces, "list the namespaces in memory with their sizes", "--data-dir",
             "--json")
    _command(sub, "show", cmd_show, "print a namespace's segments and trajectories", "--namespace", "--data-dir",
             "--json")

    p = _command(sub, "ask", cmd_ask, "answer a question from a namespace's memory, with its trace", "--namespace",
                 "--data-dir")
    p.add_argument("question")
    p.add_argument("--date", help="the question's date (e.g. LongMemEval question_date)")
    p.add_argument("--json", action="store_true", help="last stdout line is one JSON object")

    p = _command(sub, "facts", cmd_facts, "print a namespace's CoreFacts (and their operation log), or correct one: "
                 "facts edit|delete|restore FACT_ID")
    p.add_argument("action", nargs="?", default="list", choices=["list", "edit", "delete", "restore"],
                   help="list (default); edit, delete or restore a fact (a CoreFact F…, an ActiveFact A… for "
                        "delete and restore), logged as the person's operation")
    p.add_argument("fact_id", nargs="?", help="the fact to correct, e.g. F12")
    p.add_argument("--statement", help="edit: the fact's new statement")
    p.add_argument("--subject", help="edit: its new subject")
    p.add_argument("--type", help="edit: its new type (one of the schema's)")
    p.add_argument("--when", help="edit: its new event date, e.g. 2023-05-08")
    p.add_argument("--namespace", required=True)
    p.add_argument("--data-dir")
    p.add_argument("--history", action="store_true", help="include superseded facts")
    p.add_argument("--log", action="store_true", help="also print the operation log")
    p.add_argument("--json", action="store_true")

    p = _command(sub, "calibrate", cmd_calibrate, "distribution of φ in stored namespaces under each s_sem mapping")
    p.add_argument("--namespace", action="append", required=True, help="repeat for several")
    p.add_argument("--data-dir")
    p.add_argument("--json", action="store_true")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    start = time.perf_counter()
    try:
        return args.func(args)
    except MemSIFError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `python -m memsif show ... | head`
        sys.stderr.close()
        return 0
    finally:
        logging.getLogger(__name__).info("done in %.1f s", time.perf_counter() - start)
