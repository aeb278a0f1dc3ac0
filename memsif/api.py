"""The engine's public names: what programs built over the engine (the inspector, tools of one's own)
import. Everything else in ``memsif`` is the engine's inside and may change without notice.

The engine (§3) with its settings, the records it stores and returns (§3.2–3.5), the errors it raises,
transcript loading, the export format, the trace of an answer (§3.5), and the job and lock handles a
server needs to share one model between a chat and a build (and the model work a build has ahead).
"""

from __future__ import annotations

from memsif.answer.query import Answer
from memsif.config import LLM_BACKENDS, AnswerSettings, MemSIFConfig, default_data_dir
from memsif.engine import IngestReport, MemSIF
from memsif.errors import JobCancelled, MemSIFError, NotFoundError, SourceConflict, TranscriptError
from memsif.ingest import ProgressFn
from memsif.interaction.forecast import Workload, workload
from memsif.interaction.link import decision_threshold
from memsif.interaction.titles import trajectory_name
from memsif.interaction.trajectories import trajectory_terms
from memsif.io import as_memories, load_transcripts
from memsif.io.chatlog import AmbiguousDates
from memsif.io.names import checked_namespace, readable
from memsif.io.transcripts import HISTORY_FORMATS
from memsif.llm import Reading, reading_reported, runtime_of
from memsif.llm.packaged import PACKAGED_MODELS
from memsif.locks import cancel, check_cancelled, held_by_jobs, interactive, job, queue_position, sharing, waited
from memsif.records import (
    BoundaryRule,
    Evidence,
    FactOp,
    FactOperation,
    Message,
    SegmentDecision,
    TrajectoryDecision,
    record_number,
)
from memsif.search import Found
from memsif.timeparse import day_text, parse_time
from memsif.transfer import NamespaceExport, check_export, is_export, read_export, same_content, write_export

__all__ = [
    "HISTORY_FORMATS",
    "LLM_BACKENDS",
    "PACKAGED_MODELS",
    "AmbiguousDates",
    "Answer",
    "AnswerSettings",
    "BoundaryRule",
    "Evidence",
    "FactOp",
    "FactOperation",
    "Found",
    "IngestReport",
    "JobCancelled",
    "MemSIF",
    "MemSIFConfig",
    "MemSIFError",
    "Message",
    "NamespaceExport",
    "NotFoundError",
    "ProgressFn",
    "Reading",
    "SegmentDecision",
    "SourceConflict",
    "TrajectoryDecision",
    "TranscriptError",
    "Workload",
    "as_memories",
    "cancel",
    "check_cancelled",
    "check_export",
    "checked_namespace",
    "day_text",
    "decision_threshold",
    "default_data_dir",
    "held_by_jobs",
    "interactive",
    "is_export",
    "job",
    "load_transcripts",
    "parse_time",
    "queue_position",
    "read_export",
    "readable",
    "reading_reported",
    "record_number",
    "runtime_of",
    "same_content",
    "sharing",
    "trajectory_name",
    "trajectory_terms",
    "waited",
    "workload",
    "write_export",
]
