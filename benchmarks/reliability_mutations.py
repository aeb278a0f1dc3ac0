"""The check that each reliability test fails without its fix: every fix is removed in turn
from a temporary copy of this checkout and the test that covers it is run there; it must fail.

    python benchmarks/reliability_mutations.py [NAME-FRAGMENT ...]

Prints one line per fault class: ``OK`` when the test fails without the fix, ``BAD`` when it still
passes (the test does not guard the fix), ``??`` when the code the mutation expects has moved.
Exit status 1 if any line is not ``OK``. Nothing in the checkout itself is changed.
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]

#: (fault class, file, the fix's code, what replaces it, the test that must then fail)
MUTATIONS = [
    (
        "empty/blank input",
        "memsif/ingest.py",
        "if messages and not with_text:",
        "if False:",
        "tests/test_bad_input.py::test_a_transcript_without_text_creates_no_memory_and_says_so",
    ),
    (
        "empty transcript file",
        "memsif/io/transcripts.py",
        "if not any(t.messages for t in found):",
        "if False:",
        "tests/test_loaders.py::test_malformed_transcripts_name_file_and_position",
    ),
    (
        "malformed layout names its item",
        "memsif/io/transcripts.py",
        "        if not isinstance(x, dict):\n            raise TranscriptError(",
        "        if False:\n            raise TranscriptError(",
        "tests/test_loaders.py::test_malformed_transcripts_name_file_and_position",
    ),
    (
        "LLM JSON debris",
        "memsif/facts/core.py",
        'grounding.DEBRIS.search(it.subject) or not re.search(r"\\w", it.subject)',
        "False",
        "tests/test_core_facts.py::test_json_debris_in_a_subject_is_dropped_with_a_recorded_error",
    ),
    (
        "other embedder",
        "memsif/store/qdrant.py",
        'if meta.get("embedder") != embedder_name or int(meta.get("dim", -1)) != dim:',
        "if False:",
        "tests/test_store.py::test_other_embedder_on_existing_store_is_a_clear_error",
    ),
    (
        "second process",
        "memsif/store/qdrant.py",
        'if "already accessed" in str(exc) or isinstance(exc, BlockingIOError):',
        "if False:",
        "tests/test_store.py::test_second_process_on_same_folder_gets_a_clear_message",
    ),
    (
        "kill -9 repair",
        "memsif/ingest.py",
        "        if repair.needed:\n            self._write_repair(state, repair)\n"
        "        restore(state, repair.segments, repair.trajectories)",
        "        restore(state, store.segments(ns), store.trajectories(ns))",
        "tests/test_crash.py",
    ),
    (
        "re-ingest with other text",
        "memsif/ingest.py",
        "        if conflicts:\n",
        "        if False:\n",
        "tests/test_store.py::test_another_transcript_with_the_same_ids_is_refused_not_silently_skipped",
    ),
    (
        "re-ingest idempotent",
        "memsif/ingest.py",
        "        seen = set(state.messages)\n",
        "        seen = set()\n",
        "tests/test_store.py::test_second_ingest_continues_and_is_idempotent",
    ),
    (
        "huge message clipped",
        "memsif/retrieval.py",
        "EVIDENCE_CHARS = 600",
        "EVIDENCE_CHARS = 10**9",
        "tests/test_bad_input.py::test_a_30000_token_pasted_log_is_stored_whole_warned_about_and_clipped_for_the_models",
    ),
    (
        "upload size limit",
        "memsif/inspector/build.py",
        "if os.path.getsize(path) > MAX_UPLOAD_BYTES:",
        "if False:",
        "tests/test_app.py::test_uploads_over_the_size_limit_are_refused_before_parsing",
    ),
    (
        "relative date vs session date",
        "memsif/timeparse.py",
        "def resolve_relative_date(expression: str, base: datetime) -> datetime | None:",
        "def resolve_relative_date(expression: str, base: datetime) -> datetime | None:\n    base = datetime.now()",
        "tests/test_relative_dates.py",
    ),
    (
        "priority lock",
        "memsif/locks.py",
        "return t.cls, self._served.get(t.job, -1), t.arrival",
        "return 0, self._served.get(t.job, -1), t.arrival",
        "tests/test_concurrency.py",
    ),
    (
        "namespace deletion",
        "memsif/store/qdrant.py",
        "for name in _ALL_COLLECTIONS:\n            if name in existing:",
        "for name in _ALL_COLLECTIONS[:1]:\n            if name in existing:",
        "tests/test_store.py::test_a_deleted_namespace_is_gone_from_search_views_and_disk_after_a_restart",
    ),
    (
        "LLM fences",
        "memsif/llm/structured.py",
        "value = _first_json_value(candidate)",
        "value = candidate",
        "tests/test_structured.py::test_recovers_json_from_fences_and_prose",
    ),
    (
        "LLM prose/truncated/empty",
        "memsif/facts/core.py",
        "        except LLMError as exc:\n            return [], [self._log(",
        "        except ValueError as exc:\n            return [], [self._log(",
        "tests/test_core_facts.py::test_empty_or_truncated_reply_is_a_recorded_error_not_an_empty_success",
    ),
    (
        "LLM names records that do not exist",
        "memsif/facts/core.py",
        "valid = sorted({i for i in item.sources if 1 <= i <= len(messages)})",
        "valid = sorted(set(item.sources))",
        "tests/test_core_facts.py::test_fenced_reply_is_recovered_and_bad_source_index_is_range_checked",
    ),
    (
        "cut-off reply salvaged",
        "memsif/facts/core.py",
        "items = salvage_items(reply.text, item_model)",
        "items = []",
        "tests/test_core_facts.py::test_complete_facts_are_recovered_from_a_cut_off_reply",
    ),
    (
        "operation log readable while written",
        "memsif/engine.py",
        "        self._require(namespace)\n"
        "        return select_operations(self.store.fact_ops(namespace), op, subject)",
        "        with self._namespace_lock(namespace):\n"
        "            return select_operations(self.store.fact_ops(namespace), op, subject)",
        "tests/test_concurrency.py::test_a_chat_in_the_same_namespace_does_not_wait_for_its_core_facts",
    ),
    # a person's history as one memory
    (
        "mixed time zones",
        "memsif/records.py",
        "        if value is not None and value.tzinfo is not None:",
        "        if False:",
        "tests/test_bad_input.py::test_mixed_aware_and_naive_times_follow_one_rule_on_every_entry_path",
    ),
    (
        "multi-conversation export: ids keyed by conversation",
        "memsif/io/transcripts.py",
        'f"{key}:{len(messages) + 1}", msg.author.role',
        'f"M{len(messages) + 1}", msg.author.role',
        "tests/test_placement.py::test_an_export_of_three_conversations_is_one_history_in_the_order_they_happened",
    ),
    (
        "multi-conversation export: one memory",
        "memsif/io/transcripts.py",
        "    return [one_history(history, Path(history[0].path).stem), *others]",
        "    return list(transcripts)",
        "tests/test_placement.py::test_the_cli_builds_an_export_into_one_namespace_and_reads_it_again_without_change",
    ),
    (
        "appended session restarts the numbering",
        "memsif/io/placement.py",
        "    renumber = _renumbered(session, taken, session_ids) if same_text * 2 < len(colliding) else None",
        "    renumber = None",
        "tests/test_placement.py::test_a_second_plain_text_session_that_restarts_at_d1_1_is_appended_and_a_retry_adds_nothing",
    ),
    (
        "retried session matched by content",
        "memsif/io/placement.py",
        "        if known[:n] != content[:n]:",
        "        if True:",
        "tests/test_placement.py::test_a_second_plain_text_session_that_restarts_at_d1_1_is_appended_and_a_retry_adds_nothing",
    ),
    (
        "corrected re-export is not silently skipped",
        "memsif/io/placement.py",
        '("time", _time_text(stored), _time_text(given))',
        '("time", "", "")',
        "tests/test_placement.py::test_the_engine_refuses_a_corrected_source_with_what_differs_then_replaces_it",
    ),
    (
        "kill -9 during CoreFact extraction",
        "memsif/ingest.py",
        "            batches = self._finish_logged_batches(state, batches)",
        "            pass",
        "tests/test_crash.py::test_an_extraction_killed_after_a_batchs_log_write_resumes_without_writing_it_twice",
    ),
    (
        "CJK and other unspaced scripts in lexical search",
        "memsif/lexical.py",
        "            if _UNSPACED.search(t.text):",
        "            if False:",
        "tests/test_retrieval.py::test_chinese_japanese_thai_and_korean_words_are_found_by_keyword",
    ),
    (
        "damaged store folder",
        "memsif/store/connection.py",
        "    check_folder(path)\n",
        "",
        "tests/test_store.py::test_a_damaged_store_is_a_store_error_naming_the_folder_and_nothing_changes",
    ),
    (
        "read-only store folder",
        "memsif/store/connection.py",
        "    if writable(path):",
        "    if True:",
        "tests/test_store.py::test_a_read_only_folder_can_be_read_and_refuses_writes_by_name",
    ),
    (
        "delete during a question",
        "memsif/query.py",
        "        self._require_still_there(namespace)  # an answer from a memory deleted meanwhile is no answer",
        "",
        "tests/test_store.py::test_a_question_that_loses_the_race_with_a_delete_is_told_the_memory_was_deleted",
    ),
    (
        "nothing relevant in memory",
        "memsif/query.py",
        "        result.nothing_relevant = floor > 0 and (result.relevance is None or result.relevance < floor)",
        "        result.nothing_relevant = False",
        "tests/test_bad_input.py::test_a_question_about_nothing_in_memory_is_answered_i_dont_know_without_the_model",
    ),
    (
        "answer repeating an unsupported premise",
        "memsif/query.py",
        "        result.unsupported_mentions = unsupported_mentions(result.answer, result.context)",
        '        result.unsupported_mentions = unsupported_mentions(result.answer, f"{question}\\n{result.context}")',
        "tests/test_bad_input.py::test_an_answer_that_repeats_the_questions_premise_without_support_is_flagged",
    ),
]


def main(only: list[str]) -> int:
    failures = 0
    with tempfile.TemporaryDirectory(prefix="memsif-mutations-") as tmp:
        root = Path(tmp) / CHECKOUT.name
        shutil.copytree(CHECKOUT, root, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.pyc"))
        if (CHECKOUT.parent / "shared").exists() and not (root.parent / "shared").exists():
            (root.parent / "shared").symlink_to(CHECKOUT.parent / "shared")
        for name, path, old, new, test in MUTATIONS:
            if only and not any(o in name for o in only):
                continue
            file = root / path
            original = file.read_text()
            if old not in original:
                print(f"??  {name}: the code to remove is no longer in {path}", flush=True)
                failures += 1
                continue
            file.write_text(original.replace(old, new, 1))
            try:
                run = subprocess.run(
                    [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", test],
                    cwd=root,
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
            finally:
                file.write_text(original)
            last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr[-200:]
            ok = run.returncode != 0
            failures += not ok
            print(f"{'OK ' if ok else 'BAD'} {name}: {test}: {last}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
