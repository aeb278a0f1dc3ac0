"""The check that each reliability test fails without its fix: every fix is removed in turn
from a temporary copy of this checkout and the test that covers it is run there; it must fail.

    python benchmarks/reliability/reliability_mutations.py [NAME-FRAGMENT ...]

Prints one line per fault class: ``OK`` when the test fails without the fix, ``BAD`` when it still
passes (the test does not guard the fix), ``??`` when the code the mutation expects has moved.
Exit status 1 if any line is not ``OK``. Nothing in the checkout itself is changed.
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]

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
        "memsif/store/points.py",
        "    if recorded != (embedder_name, dim):",
        "    if False:",
        "tests/test_store.py::test_other_embedder_on_existing_store_is_a_clear_error",
    ),
    (
        "second process",
        "memsif/store/connection.py",
        'if "already accessed" in str(exc) or isinstance(exc, BlockingIOError):',
        "if False:",
        "tests/test_store.py::test_second_process_on_same_folder_gets_a_clear_message",
    ),
    (
        "kill -9 repair",
        "memsif/ingest.py",
        "        if repair.needed:\n            decisions = self._write_repair(state, repair, decisions)\n"
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
        "memsif/answer/retrieval.py",
        "EVIDENCE_CHARS = 600",
        "EVIDENCE_CHARS = 10**9",
        "tests/test_bad_input.py::test_a_30000_token_pasted_log_is_stored_whole_warned_about_and_clipped_for_the_models",
    ),
    (
        "upload size limit",
        "memsif/inspector/build.py",
        "    if os.path.getsize(path) > limit:",
        "    if False:",
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
        "for name in ALL_COLLECTIONS:\n            if name in existing:",
        "for name in ALL_COLLECTIONS[:1]:\n            if name in existing:",
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
        "memsif/reads.py",
        "        self._require(namespace)\n"
        "        return select_operations(self._stored.fact_ops(namespace), op, subject)",
        "        with cast(EngineCore, self)._namespace_lock(namespace):\n"
        "            return select_operations(self._stored.fact_ops(namespace), op, subject)",
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
        'f"{key}:{number}", msg.author.role',
        'f"M{number}", msg.author.role',
        "tests/test_placement.py::test_an_export_of_three_conversations_is_one_history_in_the_order_they_happened",
    ),
    (
        "multi-conversation export: one memory",
        "memsif/io/transcripts.py",
        "    return [joined, *others]",
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
        "memsif/facts/step.py",
        "            batches = self._finish_logged_batches(state, batches, oplog)",
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
        "    if not writable(path):",
        "    if False:",
        "tests/test_store.py::test_a_read_only_folder_can_be_read_and_refuses_writes_by_name",
    ),
    (
        "delete during a question",
        "memsif/answer/query.py",
        "        self._require_still_there(namespace)  # an answer from a memory deleted meanwhile is no answer",
        "",
        "tests/test_store.py::test_a_question_that_loses_the_race_with_a_delete_is_told_the_memory_was_deleted",
    ),
    (
        "nothing relevant in memory",
        "memsif/answer/relevance.py",
        "    if relevance < floor:\n        why = f\"{best}, below the relevance floor",
        "    if False:\n        why = f\"{best}, below the relevance floor",
        "tests/test_bad_input.py::test_a_question_about_nothing_in_memory_is_answered_i_dont_know_without_the_model",
    ),
    (
        "answer repeating an unsupported premise",
        "memsif/answer/query.py",
        "            unsupported_mentions(result.answer, result.context), result.question)",
        '            unsupported_mentions(result.answer, f"{result.question}\\n{result.context}"), result.question)',
        "tests/test_bad_input.py::test_an_answer_that_repeats_the_questions_premise_without_support_is_flagged",
    ),
    (
        "the question's own words are the premise, not an invention",
        "memsif/answer/check.py",
        "        (premise if worded or (value and value <= numbers) else own).append(mention)",
        "        own.append(mention)",
        "tests/test_retrieval.py::test_an_answer_naming_what_its_context_lacks_is_flagged_and_the_demo_model_is_named",
    ),
    # what a transcript's messages become
    (
        "one person, several speakers: invisible characters",
        "memsif/io/speakers.py",
        'cleaned = " ".join(unicodedata.normalize("NFC", _INVISIBLE.sub("", name)).split())',
        'cleaned = " ".join(unicodedata.normalize("NFC", name).split())',
        "tests/test_transcript_content.py::test_a_name_written_in_other_case_invisible_characters_or_unicode_form_is_one_speaker[jsonl]",
    ),
    (
        "one person, several speakers: Unicode form",
        "memsif/io/speakers.py",
        'cleaned = " ".join(unicodedata.normalize("NFC", _INVISIBLE.sub("", name)).split())',
        'cleaned = " ".join(_INVISIBLE.sub("", name).split())',
        "tests/test_transcript_content.py::test_a_name_written_in_other_case_invisible_characters_or_unicode_form_is_one_speaker[jsonl]",
    ),
    (
        "one person, several speakers: case",
        "memsif/io/speakers.py",
        "            by_person.setdefault(written.casefold(), []).append(written)\n",
        "            by_person.setdefault(written, []).append(written)\n",
        "tests/test_transcript_content.py::test_a_name_written_in_other_case_invisible_characters_or_unicode_form_is_one_speaker[jsonl]",
    ),
    (
        "one person, several speakers: the stored spelling wins",
        "memsif/io/speakers.py",
        "    for counts in (given, kept):",
        "    for counts in (kept, given):",
        "tests/test_transcript_content.py::test_the_python_api_stores_one_speaker_per_person",
    ),
    (
        "one person, several speakers: the warning names the spellings",
        "memsif/io/speakers.py",
        "    if not variants:\n        return spelling, []",
        "    if True:\n        return spelling, []",
        "tests/test_transcript_content.py::test_a_name_written_in_other_case_invisible_characters_or_unicode_form_is_one_speaker[claude]",
    ),
    (
        "one person, several speakers: a loaded file",
        "memsif/io/transcripts.py",
        "        t.messages, named = with_one_spelling(t.messages)",
        "        named = []",
        "tests/test_transcript_content.py::test_a_name_written_in_other_case_invisible_characters_or_unicode_form_is_one_speaker[text]",
    ),
    (
        "one person, several speakers: a history of several conversations",
        "memsif/io/transcripts.py",
        "    messages, named = with_one_spelling(messages)  # one person across the conversations too",
        "    named = []",
        "tests/test_transcript_content.py::test_a_history_of_several_files_and_a_later_session_keep_one_spelling",
    ),
    (
        "one person, several speakers: a transcript appended to a memory",
        "memsif/io/placement.py",
        "    given, named = with_one_spelling(given, stored)",
        "    named = []",
        "tests/test_transcript_content.py::test_a_history_of_several_files_and_a_later_session_keep_one_spelling",
    ),
    (
        "one person, several speakers: the Python API",
        "memsif/ingest.py",
        "        with_text, named = with_one_spelling(with_text, list(state.messages.values()))",
        "        named = []",
        "tests/test_transcript_content.py::test_the_python_api_stores_one_speaker_per_person",
    ),
    (
        "not conversation: prompts and tool output by role",
        "memsif/io/roles.py",
        "    return NOT_CONVERSATION.get(role.strip().casefold()) if isinstance(role, str) else None",
        "    return None",
        "tests/test_transcript_content.py::test_prompts_tool_calls_and_tool_output_are_left_out_and_counted[openai]",
    ),
    (
        "not conversation: OpenAI tool calls",
        "memsif/io/roles.py",
        '    if message.get("tool_calls") or message.get("function_call"):',
        "    if False:",
        "tests/test_transcript_content.py::test_prompts_tool_calls_and_tool_output_are_left_out_and_counted[openai]",
    ),
    (
        "not conversation: tool-use content parts",
        "memsif/io/roles.py",
        "    return next((_TOOL_PARTS[t] for t in parts if t in _TOOL_PARTS), None)",
        "    return None",
        "tests/test_transcript_content.py::test_prompts_tool_calls_and_tool_output_are_left_out_and_counted[claude]",
    ),
    (
        "not conversation: ChatGPT tool calls",
        "memsif/io/transcripts.py",
        '    to_tool = msg.recipient not in (None, "all") or '
        '(msg.content is not None and msg.content.content_type == "code")',
        "    to_tool = False",
        "tests/test_transcript_content.py::test_prompts_tool_calls_and_tool_output_are_left_out_and_counted[chatgpt]",
    ),
    (
        "not conversation: counted in a warning",
        "memsif/io/roles.py",
        "    n = sum(kinds.values())",
        "    n = 0",
        "tests/test_transcript_content.py::test_prompts_tool_calls_and_tool_output_are_left_out_and_counted[text]",
    ),
    (
        "not conversation: LoCoMo",
        "memsif/io/transcripts.py",
        "            if kind := left_out_as(turn.speaker):",
        "            if kind := None:",
        "tests/test_transcript_content.py::test_prompts_tool_calls_and_tool_output_are_left_out_and_counted[locomo]",
    ),
    (
        "not conversation: LongMemEval",
        "memsif/io/transcripts.py",
        "            if kind := left_out_as(turn.role):",
        "            if kind := None:",
        "tests/test_transcript_content.py::test_prompts_tool_calls_and_tool_output_are_left_out_and_counted[longmemeval]",
    ),
    (
        "not conversation: ChatGPT export",
        "memsif/io/transcripts.py",
        "        if kind := (_chatgpt_left_out(msg) if text or audio else None):",
        "        if kind := None:",
        "tests/test_transcript_content.py::test_prompts_tool_calls_and_tool_output_are_left_out_and_counted[chatgpt]",
    ),
    (
        "not conversation: Claude export",
        "memsif/io/transcripts.py",
        "        kind = left_out_as(m.sender) or "
        '(None if said else tool_call_in({"content": [{"type": p.type} for p in parts]}))',
        "        kind = None",
        "tests/test_transcript_content.py::test_prompts_tool_calls_and_tool_output_are_left_out_and_counted[claude]",
    ),
    (
        "not conversation: OpenAI message list",
        "memsif/io/transcripts.py",
        "        if kind := _not_conversation(msg.role, text, item):",
        "        if kind := None:",
        "tests/test_transcript_content.py::test_prompts_tool_calls_and_tool_output_are_left_out_and_counted[openai]",
    ),
    (
        "not conversation: plain text",
        "memsif/io/transcripts.py",
        "            kind = left_out_as(match.group(1))",
        "            kind = None",
        "tests/test_transcript_content.py::test_prompts_tool_calls_and_tool_output_are_left_out_and_counted[text]",
    ),
    (
        "not conversation: JSONL",
        "memsif/io/transcripts.py",
        "        if kind := _not_conversation(rec.role or rec.speaker, text, obj):",
        "        if kind := None:",
        "tests/test_transcript_content.py::test_prompts_tool_calls_and_tool_output_are_left_out_and_counted[jsonl]",
    ),
    (
        "implausible dates: before 1990",
        "memsif/io/dates.py",
        "    return when is not None and (when < EARLIEST or when > (now or _now()) + CLOCK_SLACK)",
        "    return when is not None and when > (now or _now()) + CLOCK_SLACK",
        "tests/test_transcript_content.py::test_a_date_before_1990_or_after_the_load_day_is_kept_and_warned_about_with_its_message[claude]",
    ),
    (
        "implausible dates: after the load day",
        "memsif/io/dates.py",
        "    return when is not None and (when < EARLIEST or when > (now or _now()) + CLOCK_SLACK)",
        "    return when is not None and when < EARLIEST",
        "tests/test_transcript_content.py::test_a_date_before_1990_or_after_the_load_day_is_kept_and_warned_about_with_its_message[text]",
    ),
    (
        "implausible dates: a loaded file",
        "memsif/io/transcripts.py",
        "        t.warnings += named + _undated(t) + implausible_dates(t.messages)",
        "        t.warnings += named + _undated(t)",
        "tests/test_transcript_content.py::test_a_date_before_1990_or_after_the_load_day_is_kept_and_warned_about_with_its_message[jsonl]",
    ),
    (
        "implausible dates: the Python API",
        "memsif/ingest.py",
        "        warnings += [] if self.dates_checked else implausible_dates(fresh)",
        "        warnings += []",
        "tests/test_transcript_content.py::test_the_python_api_warns_about_implausible_dates_once_per_path",
    ),
    (
        "implausible dates: said once per path",
        "memsif/sources.py",
        "        return IngestPipeline(engine.config, engine, ns, dates_checked=True).run(",
        "        return IngestPipeline(engine.config, engine, ns, dates_checked=False).run(",
        "tests/test_transcript_content.py::test_the_python_api_warns_about_implausible_dates_once_per_path",
    ),
    (
        "implausible dates: marked in the inspector's tables",
        "memsif/viz.py",
        '    return f"{shown} ⚠ date cannot be right" if implausible(when) else shown',
        "    return shown",
        "tests/test_transcript_content.py::test_the_inspectors_message_tables_mark_an_implausible_date",
    ),
    (
        "Claude attachments: kept as the message's text",
        "memsif/io/transcripts.py",
        '        text = "\\n\\n".join(x for x in '
        '(said or (m.text or "").strip(), *_claude_attachments(m, unread)) if x)',
        '        text = said or (m.text or "").strip()',
        "tests/test_transcript_content.py::test_a_claude_messages_attachments_are_kept_as_its_text",
    ),
    (
        "Claude attachments: files without extracted text keep their name",
        "memsif/io/transcripts.py",
        "    for a in [*m.attachments, *(f for f in m.files if f.file_name not in named)]:",
        "    for a in m.attachments:",
        "tests/test_transcript_content.py::test_a_claude_messages_attachments_are_kept_as_its_text",
    ),
    (
        "Claude attachments: files without extracted text are warned about",
        "memsif/io/transcripts.py",
        "    if unread:\n        warnings.append(",
        "    if False:\n        warnings.append(",
        "tests/test_transcript_content.py::test_a_claude_messages_attachments_are_kept_as_its_text",
    ),
    # exports
    (
        "newer export: refused",
        "memsif/transfer.py",
        "        if newer and (readable is None or readable > EXPORT_VERSION):",
        "        if False:",
        "tests/test_export.py::test_an_export_of_a_newer_format_says_to_upgrade_wherever_it_is_read",
    ),
    (
        "newer export: the formats named",
        "memsif/transfer.py",
        '(format {version}; this one reads up to "\n                              f"{EXPORT_VERSION}); upgrade',
        '(format ?; this one reads up to "\n                              f"?); upgrade',
        "tests/test_export.py::test_an_export_of_a_newer_format_says_to_upgrade_wherever_it_is_read",
    ),
    (
        "newer export: read as the format it names",
        "memsif/transfer.py",
        '        data = {k: v for k, v in data.items() if k != "readable_as"} | {"format": EXPORT_FORMAT}',
        "        pass",
        "tests/test_export.py::test_a_newer_export_readable_by_this_version_is_read_and_its_unknown_fields_left_out_with_a_warning",
    ),
    (
        "newer export: unknown fields left out",
        "memsif/transfer.py",
        '        unknown = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]',
        "        unknown = []",
        "tests/test_export.py::test_a_newer_export_readable_by_this_version_is_read_and_its_unknown_fields_left_out_with_a_warning",
    ),
    (
        "newer export: unknown fields named",
        "memsif/transfer.py",
        '    named = ", ".join(f"{name} ({n}×)" if n > 1 else name for name, n in left_out.items())',
        '    named = "some fields"',
        "tests/test_export.py::test_a_newer_export_readable_by_this_version_is_read_and_its_unknown_fields_left_out_with_a_warning",
    ),
    (
        "newer export: the command line says what was left out",
        "memsif/cli.py",
        "    for w in caught:\n        print(f\"warning: {args.path}: {w.message}\", file=sys.stderr)",
        "    for w in []:\n        print(f\"warning: {args.path}: {w.message}\", file=sys.stderr)",
        "tests/test_export.py::test_a_newer_export_readable_by_this_version_is_read_and_its_unknown_fields_left_out_with_a_warning",
    ),
    (
        "failed write: written in place",
        "memsif/files.py",
        '        with open(tmp, "xb") as fh:',
        '        tmp = path\n        with open(tmp, "wb") as fh:',
        "tests/test_export.py::test_a_failed_export_leaves_the_previous_one_as_it_was",
    ),
    (
        "failed write: written in place (file-size limit)",
        "memsif/files.py",
        '        with open(tmp, "xb") as fh:',
        '        tmp = path\n        with open(tmp, "wb") as fh:',
        "tests/test_export.py::test_an_export_over_the_file_size_limit_leaves_the_previous_one_as_it_was",
    ),
    (
        "failed write: no partial file left",
        "memsif/files.py",
        "        tmp.unlink(missing_ok=True)",
        "        pass",
        "tests/test_export.py::test_a_failed_export_leaves_the_previous_one_as_it_was",
    ),
    (
        "failed write: the export",
        "memsif/transfer.py",
        "    return write_file(path, "
        'gzip.compress(text, compresslevel=9) if path.suffix == ".gz" else text, "the export")',
        '    path.write_bytes(gzip.compress(text, compresslevel=9) if path.suffix == ".gz" else text)\n    return path',
        "tests/test_export.py::test_an_export_over_the_file_size_limit_leaves_the_previous_one_as_it_was",
    ),
    (
        "failed write: the evaluation report",
        "memsif/eval/cli.py",
        '        write_file(args.out, text, "the report")',
        "        Path(args.out).write_text(text)",
        "tests/test_eval.py::test_a_report_that_cannot_be_written_leaves_the_last_one_as_it_was",
    ),
    # transcript text shown as written in the inspector
    (
        "shown as written: Markdown escape",
        "memsif/markdown.py",
        '    heading or a list at the start; line breaks kept as spaces."""',
        '    heading or a list at the start; line breaks kept as spaces."""\n    return text',
        "tests/test_viz.py::test_what_a_transcript_brings_is_escaped_in_every_figure_and_markdown_view",
    ),
    (
        "shown as written: HTML in Markdown",
        "memsif/markdown.py",
        '    flat = _MARKUP.sub(r"\\\\\\1", html.escape(" ".join(text.split()), quote=False))',
        '    flat = _MARKUP.sub(r"\\\\\\1", " ".join(text.split()))',
        "tests/test_viz.py::test_what_a_transcript_brings_is_escaped_in_every_figure_and_markdown_view",
    ),
    (
        "shown as written: Markdown links and emphasis",
        "memsif/markdown.py",
        '    flat = _MARKUP.sub(r"\\\\\\1", html.escape(" ".join(text.split()), quote=False))',
        '    flat = html.escape(" ".join(text.split()), quote=False)',
        "tests/test_viz.py::test_what_a_transcript_brings_is_escaped_in_every_figure_and_markdown_view",
    ),
    (
        "shown as written: Markdown lists and headings",
        "memsif/markdown.py",
        "    return _LINE_START.sub(",
        "    return flat or _LINE_START.sub(",
        "tests/test_viz.py::test_what_a_transcript_brings_is_escaped_in_every_figure_and_markdown_view",
    ),
    (
        "shown as written: code spans",
        "memsif/markdown.py",
        '    fence = "`" * (longest + 1)',
        '    fence = "`"',
        "tests/test_viz.py::test_an_id_holding_backticks_or_markup_is_one_code_span",
    ),
    (
        "shown as written: HTML escape",
        "memsif/markdown.py",
        "    return html.escape(text, quote=False)",
        "    return text",
        "tests/test_viz.py::test_what_a_transcript_brings_is_escaped_in_every_figure_and_markdown_view",
    ),
    (
        "shown as written: timeline hover",
        "memsif/viz.py",
        "            hover.append(f\"<b>{escape_html(d.message_id)}</b> {escape_html(m.speaker) if m else ''}: \"\n"
        '                         f"{escape_html(text)}<br>"',
        "            hover.append(f\"<b>{d.message_id}</b> {m.speaker if m else ''}: \"\n"
        '                         f"{text}<br>"',
        "tests/test_viz.py::test_what_a_transcript_brings_is_escaped_in_every_figure_and_markdown_view",
    ),
    (
        "shown as written: cluster hover",
        "memsif/viz.py",
        "f\"{escape_html((c.statements or [''])[0][:120])}\" for c in rows]",
        "f\"{(c.statements or [''])[0][:120]}\" for c in rows]",
        "tests/test_viz.py::test_what_a_transcript_brings_is_escaped_in_every_figure_and_markdown_view",
    ),
    (
        "shown as written: evidence lens ticks",
        "memsif/viz.py",
        '    labels = [f"{k + 1}. {escape_html(r.question[:60])}" for k, r in enumerate(chosen)]',
        '    labels = [f"{k + 1}. {r.question[:60]}" for k, r in enumerate(chosen)]',
        "tests/test_viz.py::test_what_a_transcript_brings_is_escaped_in_every_figure_and_markdown_view",
    ),
    (
        "shown as written: the chat's answer",
        "memsif/viz.py",
        '    lines = ["\\n".join(escape_markdown(line) for line in answer.answer.splitlines()) or "(empty answer)"]',
        '    lines = [answer.answer or "(empty answer)"]',
        "tests/test_viz.py::test_what_a_transcript_brings_is_escaped_in_every_figure_and_markdown_view",
    ),
    (
        "shown as written: the chat's trace",
        "memsif/viz.py",
        '        lines.append(f"\\n⚠️ {escape_markdown(err)}")',
        '        lines.append(f"\\n⚠️ {err}")',
        "tests/test_viz.py::test_what_a_transcript_brings_is_escaped_in_every_figure_and_markdown_view",
    ),
    (
        "shown as written: error pop-ups",
        "memsif/inspector/common.py",
        "    return _guarded(fn, escape_html)",
        "    return _guarded(fn, str)",
        "tests/test_app.py::test_an_error_shown_in_the_page_is_escaped_and_an_agent_gets_it_as_it_is",
    ),
    (
        "shown as written: an agent tool's error as it is",
        "memsif/inspector/common.py",
        "    return _guarded(fn, str)",
        "    return _guarded(fn, escape_html)",
        "tests/test_app.py::test_an_error_shown_in_the_page_is_escaped_and_an_agent_gets_it_as_it_is",
    ),
    (
        "shown as written: HTML tags give no key entities",
        "memsif/entities.py",
        '    return _TAG.sub(" ", text) if "<" in text else text',
        "    return text",
        "tests/test_segments.py::test_html_tags_in_a_message_give_no_key_entities[regex]",
    ),
    (
        "shown as written: the regex extractor reads no tags",
        "memsif/entities.py",
        '            for sentence in re.split(r"(?<=[.!?])\\s+", without_tags(text)):',
        '            for sentence in re.split(r"(?<=[.!?])\\s+", text):',
        "tests/test_segments.py::test_html_tags_in_a_message_give_no_key_entities[regex]",
    ),
    (
        "shown as written: spaCy reads no tags",
        "memsif/entities.py",
        "        for doc in self._nlp.pipe([without_tags(t) for t in texts], batch_size=64):",
        "        for doc in self._nlp.pipe(list(texts), batch_size=64):",
        "tests/test_segments.py::test_html_tags_in_a_message_give_no_key_entities[spacy]",
    ),
    (
        "shown as written: the chat's question",
        "memsif/inspector/chat.py",
        '{"role": "user", "content": escape_markdown(question)}',
        '{"role": "user", "content": question}',
        "tests/test_app.py::test_markup_in_a_transcript_is_shown_as_written_by_every_endpoint",
    ),
    (
        "shown as written: the chat's question (in a browser)",
        "memsif/inspector/chat.py",
        '{"role": "user", "content": escape_markdown(question)}',
        '{"role": "user", "content": question}',
        "tests/test_browser_markup.py::test_markup_in_a_transcript_is_shown_as_written_in_every_view",
    ),
    (
        "shown as written: a message in context",
        "memsif/inspector/place.py",
        '                text = f"{code_span(mid)} {escape_markdown(m.speaker)}: {escape_markdown(m.text)}"',
        '                text = f"{code_span(mid)} {m.speaker}: {m.text}"',
        "tests/test_app.py::test_markup_in_a_transcript_is_shown_as_written_by_every_endpoint",
    ),
    (
        "shown as written: the build summary",
        "memsif/inspector/build.py",
        "                     else escape_markdown(t.sample_id))",
        "                     else t.sample_id)",
        "tests/test_app.py::test_markup_in_a_transcript_is_shown_as_written_by_every_endpoint",
    ),
    (
        "shown as written: an upload refused",
        "memsif/inspector/build.py",
        'raise UploadRefused(f"⚠️ **{escape_markdown(Path(path).name)}** was not loaded: {escape_markdown(said)}\\n\\n"',
        'raise UploadRefused(f"⚠️ **{Path(path).name}** was not loaded: {said}\\n\\n"',
        "tests/test_app.py::test_a_refused_upload_and_a_failed_build_quote_what_they_name_as_written",
    ),
    (
        "shown as written: a failed build",
        "memsif/inspector/build.py",
        '        head = f"⚠️ The build failed: {escape_markdown(str(exc))}"',
        '        head = f"⚠️ The build failed: {exc}"',
        "tests/test_app.py::test_a_refused_upload_and_a_failed_build_quote_what_they_name_as_written",
    ),
    (
        "names: a namespace no store keeps is refused before the build",
        "memsif/engine.py",
        "        ns = checked_namespace(ns)\n",
        "",
        "tests/test_histories.py::test_the_python_api_refuses_a_namespace_no_store_can_keep_before_any_work",
    ),
    (
        "names: a file name that is not UTF-8",
        "memsif/io/names.py",
        "    name = readable(stem)\n",
        "    name = stem\n",
        "tests/test_histories.py::test_a_file_name_that_is_not_utf8_names_a_memory_readably_and_the_build_ends",
    ),
    (
        "names: ids with lone surrogates",
        "memsif/io/transcripts.py",
        "        m.id, c = repair(m.id)\n",
        "        c = 0\n",
        "tests/test_histories.py::test_an_id_from_a_file_that_is_not_valid_unicode_is_repaired",
    ),
    (
        "chat logs: a stamped line read as a chat log, not as JSON or speakers",
        "memsif/io/transcripts.py",
        "    if is_chat_log(raw):  # before JSON: an iOS chat log's lines start with \"[\"\n",
        "    if False:\n",
        "tests/test_histories.py::test_a_chat_log_is_read_with_its_speakers_dates_and_continuation_lines",
    ),
    (
        "chat logs: a date order that stays ambiguous is refused",
        "memsif/io/chatlog.py",
        "    if not (day_first or month_first):\n",
        "    if False:\n",
        "tests/test_histories.py::test_a_chat_log_whose_dates_could_be_either_order_is_refused_with_the_format_that_settles_it",
    ),
    (
        "chat logs: a full-width colon ends the speaker's name",
        "memsif/io/transcripts.py",
        "_SPEAKER_LINE = re.compile(r\"^([^\\s:：#][^:：\\n]{0,59}?)\\s*[:：]\\s?(.*)$\")",
        "_SPEAKER_LINE = re.compile(r\"^([^\\s:#][^:\\n]{0,59}?)\\s*:\\s?(.*)$\")",
        "tests/test_histories.py::test_a_full_width_colon_log_keeps_its_session_date",
    ),
    (
        'exports: a ZIP or a folder of parts read as one export',
        'memsif/io/transcripts.py',
        "    if is_export_bundle(p):  # a ZIP or a folder: an export's conversations documents, as one\n",
        '    if False:\n',
        'tests/test_histories.py::test_an_export_in_parts_or_zipped_is_one_history',
    ),
    (
        'exports: parts ingested one by one join one memory',
        'memsif/io/transcripts.py',
        '    joined = one_history(history, history_name(name))\n',
        '    joined = one_history(history, name)\n',
        'tests/test_histories.py::test_parts_ingested_one_by_one_join_one_memory',
    ),
    (
        'voice: a recording is not an image',
        'memsif/io/transcripts.py',
        '        elif isinstance(p, dict) and p.get("content_type") in _CHATGPT_AUDIO:\n            audio += 1\n',
        '',
        'tests/test_histories.py::test_a_voice_message_keeps_its_transcription_and_the_load_names_what_it_left_out',
    ),
    (
        'reasoning: <think> blocks left out in every format',
        'memsif/io/transcripts.py',
        '        t.warnings += _without_reasoning(t)\n',
        '',
        'tests/test_histories.py::test_a_models_reasoning_is_left_out_and_counted_in_every_format',
    ),
    (
        'do-not-remember: flagged conversations stay out',
        'memsif/io/transcripts.py',
        '        kept = [t for t, dnr in found if not dnr]\n',
        '        kept = [t for t, _ in found]\n',
        'tests/test_histories.py::test_a_conversation_marked_do_not_remember_stays_out_unless_asked_for',
    ),
    (
        "undated messages: a message takes its conversation's time",
        'memsif/io/transcripts.py',
        '        m.time = when\n',
        '',
        'tests/test_histories.py::test_a_message_without_its_own_time_takes_its_conversations_and_the_load_says_so',
    ),
    (
        'readers: a read never holds the folder',
        'memsif/store/connection.py',
        '    if when_busy == "read":\n        return _snapshot(',
        '    if False:\n        return _snapshot(',
        'tests/test_histories.py::test_a_read_never_holds_the_folder_so_a_writer_can_start_meanwhile',
    ),
    (
        'readers: an answer from a snapshot feeds the ActiveFact clusters in the folder',
        'memsif/cli.py',
        '    if not reader.store.read_only or not result.evidence_used:\n        return\n',
        '    return\n',
        'tests/test_histories.py::test_an_answer_read_from_a_snapshot_adds_its_evidence_where_the_folder_is_free',
    ),
    (
        'what was stored stays: a re-read of the same file is no conflict',
        'memsif/io/placement.py',
        '        if a != b and not read_again(name, a, b):\n',
        '        if a != b:\n',
        'tests/test_histories.py::test_a_memory_built_before_these_readings_keeps_its_messages_and_a_re_ingest_adds_only_the_new',
    ),
    (
        "unsupported mentions: a function word of the answer's language is no name",
        'memsif/answer/check.py',
        '    context_words = {w.lower for w in tokens} | (function_words(lang) if lang != "en" else frozenset())\n',
        '    context_words = {w.lower for w in tokens}\n',
        'tests/test_retrieval.py::test_an_answer_naming_what_its_context_lacks_is_flagged_and_the_demo_model_is_named',
    ),
    (
        'relative dates: the phrasings people use are resolved on every path',
        'memsif/timeparse.py',
        '    rf"|this (?:morning|afternoon|evening)|over the weekend"\n',
        '',
        'tests/test_relative_dates.py::test_a_relative_date_reaches_the_answer_and_the_facts_as_the_message_meant_it',
    ),
    (
        'waits: the countdown stands still while the job waits for the model',
        'memsif/inspector/pace.py',
        '        return self.clock() - self.paused()\n',
        '        return self.clock()\n',
        'tests/test_pace.py::test_the_countdown_stands_still_while_the_job_waits_for_the_model',
    ),
    (
        'facts as they are written: the first batch goes alone',
        'memsif/facts/core.py',
        '    starts = [0, *range(1, len(batches), parallel)] if parallel > 1 else list(range(len(batches)))\n',
        '    starts = list(range(0, len(batches), parallel))\n',
        'tests/test_core_facts.py::test_the_first_batchs_facts_are_written_after_one_extraction_then_batches_go_in_groups',
    ),
    (
        'memory seen as it is made: the other tabs show the memory begun anew',
        'memsif/inspector/demo.py',
        '    if source is None or not source.building:\n',
        '    if True:\n',
        'tests/test_browser_growing.py::test_every_view_shows_the_new_memory_as_it_is_made',
    ),
    (
        'memory seen as it is made: the timeline is drawn again while messages are placed',
        'memsif/inspector/build.py',
        '        if placed() and time.monotonic() - drawn >= (REDRAW_SECONDS if every is None else every):\n',
        '        if False:\n',
        'tests/test_browser_growing.py::test_every_view_shows_the_new_memory_as_it_is_made',
    ),
    (
        'memory seen as it is made: the structure is written in parts',
        'memsif/ingest.py',
        '            every = self.config.store.persist_every\n',
        '            every = max(len(admitted.fresh), 1)\n',
        'tests/test_crash.py::test_a_build_is_readable_while_it_places_its_messages',
    ),
    (
        'segments respect sessions: a new session opens a segment by rule',
        'memsif/interaction/segments.py',
        '        if self._new_session(previous, message, gap):\n',
        '        if False:\n',
        'tests/test_segments.py::test_no_segment_spans_two_sessions_of_a_locomo_conversation',
    ),
    (
        'segments respect exchanges: a short reply is read with its predecessor',
        'memsif/interaction/segments.py',
        '        if not short or previous.speaker',
        '        if True or previous.speaker',
        'tests/test_segments.py::test_a_short_reply_is_read_with_the_message_it_answers',
    ),
    (
        'refusals that do not refuse what memory holds: a country named by one of its cities',
        'memsif/answer/relevance.py',
        ' and not place_named(n, memory.text)]:',
        ']:',
        'tests/test_relevance.py::test_a_country_or_state_is_mentioned_by_one_of_its_cities',
    ),
    (
        'facts as they are written: the model titles come after the first batch',
        'memsif/facts/step.py',
        '                if done.index == 0 and not done.second_pass:',
        '                if done.index == done.total - 1 and not done.second_pass:',
        'tests/test_titles.py::test_by_default_the_timeline_waits_for_no_title_and_the_model_titles_after_the_first_corefacts',
    ),
    (
        'waits: after a lone first batch the second wave gives the pace',
        'memsif/inspector/pace.py',
        '        if self._arriving is None:\n            return None\n        counted, since',
        '        if self._arriving is None or not self._gaps:\n            return None\n        counted, since',
        'tests/test_pace.py::test_after_a_lone_first_batch_the_second_waves_first_arrival_gives_the_pace',
    ),
    (
        'waits: a build is counted in judge prompt characters',
        'memsif/inspector/pace.py',
        '        if self._workload() is not None:\n            if (by_work',
        '        if False:\n            if (by_work',
        'tests/test_pace.py::test_a_build_that_publishes_its_workload_is_counted_in_judge_prompt_characters',
    ),
    (
        'waits: before its first judge call a build is not said to be nearly done',
        'memsif/inspector/pace.py',
        '        elif (known := self._book_pace()) is not None:',
        '        elif False:',
        'tests/test_pace.py::test_before_its_first_judge_call_a_build_is_not_said_to_be_nearly_done',
    ),
    (
        'forecast: the dry run starts from the open segment',
        'memsif/interaction/forecast.py',
        '    current = state.current_segment\n',
        '    current = None\n',
        'tests/test_forecast.py::test_a_second_call_is_forecast_from_the_memorys_open_segment_and_leaves_it_untouched',
    ),
    (
        'repair: decisions kept after a stale one are numbered on',
        'memsif/ingest.py',
        '        if first is not None and moved:  # numbered on',
        '        if False:  # numbered on',
        'tests/test_crash.py::test_a_part_killed_after_a_whole_segments_trajectory_decision_leaves_no_gap_in_the_decision_log',
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
                    errors="replace",  # a test may print a file name that is not UTF-8
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
