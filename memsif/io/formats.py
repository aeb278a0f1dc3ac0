"""Typed models of every transcript format MemSIF reads (pydantic), and their errors in words.

A field of the wrong type is an error that names the field, the type found and the type expected
(never stored as Python ``repr`` text). Message text may be a string or a list of content parts
(``[{"type": "text", "text": …}]``, the shape OpenAI-style exports use): the text parts are joined.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from memsif.errors import TranscriptError

_TEXT_PART_TYPES = {"text", "input_text", "output_text"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=False)


class ContentPart(_Model):
    """One part of a message's content; only text parts carry text."""

    type: str = "text"
    text: str | None = None


def _text_of(value: Any) -> Any:
    """A string, or the joined text parts of a content-part list; other values go on to validation
    (and fail there with the type found)."""
    if isinstance(value, list) and value and all(isinstance(p, dict) for p in value):
        texts = []
        for part in value:
            text = part.get("text")
            if part.get("type", "text") in _TEXT_PART_TYPES and text is not None:
                if not isinstance(text, str):
                    raise ValueError(f"a content part's 'text' is {type_name(text)}, expected a string")
                texts.append(text)
        return "\n".join(texts)
    return value


#: Message text: a string, or a list of content parts read as their text parts.
Text = Annotated[str, BeforeValidator(_text_of)]
#: The same, where a missing text (null) is empty (LoCoMo image turns have only a caption).
OptionalText = Annotated[str, BeforeValidator(lambda v: "" if v is None else _text_of(v))]


class LoCoMoTurn(_Model):
    speaker: str
    text: OptionalText = ""
    dia_id: str | None = None
    blip_caption: str | None = None


class LongMemEvalTurn(_Model):
    role: str
    content: Text
    has_answer: bool = False


class LongMemEvalSample(_Model):
    question_id: str | int | None = None
    haystack_sessions: list[list[LongMemEvalTurn]]
    haystack_session_ids: list[str | int] | None = None
    haystack_dates: list[str | None] | None = None
    question: str | None = None
    answer: Any = None
    question_type: str | None = None
    question_date: str | None = None
    answer_session_ids: list[str | int] = Field(default_factory=list)


class JsonlLine(_Model):
    """One JSONL line: ``speaker``/``text`` (or ``role``/``content``, where content may be null as in
    OpenAI messages: a tool call), optional time, session, id."""

    speaker: str
    text: Text
    role: str | None = None
    time: str | int | float | None = None
    session: str | int | None = None
    id: str | int | None = None

    @classmethod
    def from_obj(cls, obj: dict[str, Any]) -> JsonlLine:
        if "speaker" not in obj and "role" in obj:
            obj = {**obj, "speaker": obj.get("name") or obj["role"]}
        if "text" not in obj and "content" in obj:
            obj = {**obj, "text": "" if obj["content"] is None else obj["content"]}
        return cls.model_validate(obj)


class OpenAIMessage(_Model):
    """A chat message of the OpenAI API shape: role, content (string or parts), optional name."""

    role: str
    content: Annotated[str | None, BeforeValidator(_text_of)] = None
    name: str | None = None


class ChatGPTAuthor(_Model):
    role: str
    name: str | None = None


class ChatGPTContent(_Model):
    content_type: str = "text"
    parts: list[Any] = Field(default_factory=list)
    text: str | None = None


class ChatGPTMessage(_Model):
    """``recipient`` is "all" for what is said to the other party, a tool's name for a tool call."""

    author: ChatGPTAuthor
    content: ChatGPTContent | None = None
    create_time: float | None = None
    recipient: str | None = None


class ChatGPTNode(_Model):
    message: ChatGPTMessage | None = None
    parent: str | None = None
    children: list[str] = Field(default_factory=list)


class ChatGPTConversation(_Model):
    """One conversation of a ChatGPT export's ``conversations.json``: a tree of nodes (``mapping``);
    ``current_node`` is the leaf of the branch the user last saw."""

    title: str | None = None
    id: str | None = None
    conversation_id: str | None = None
    create_time: float | None = None
    current_node: str | None = None
    mapping: dict[str, ChatGPTNode]
    is_do_not_remember: bool | None = None
    do_not_remember_flag: bool | None = Field(None, alias="do_not_remember")

    @property
    def do_not_remember(self) -> bool:
        """Whether its person flagged it so that it would not be remembered."""
        return bool(self.is_do_not_remember or self.do_not_remember_flag)


class ClaudeAttachment(_Model):
    """A file attached to a Claude message: ``attachments`` carry the text Claude extracted from it,
    ``files`` (images, PDFs read as images) only a name."""

    file_name: str | None = None
    extracted_content: str | None = None


#: A message's files; null is none.
Files = Annotated[list[ClaudeAttachment], BeforeValidator(lambda v: [] if v is None else v)]


class ClaudeMessage(_Model):
    uuid: str | None = None
    sender: str
    text: str | None = None
    content: list[ContentPart] | None = None
    created_at: str | None = None
    attachments: Files = Field(default_factory=list)
    files: Files = Field(default_factory=list)


class ClaudeConversation(_Model):
    """One conversation of a Claude export's ``conversations.json``."""

    uuid: str | None = None
    name: str | None = None
    created_at: str | None = None
    chat_messages: list[ClaudeMessage]
    is_do_not_remember: bool | None = None
    do_not_remember_flag: bool | None = Field(None, alias="do_not_remember")

    @property
    def do_not_remember(self) -> bool:
        """Whether its person flagged it so that it would not be remembered."""
        return bool(self.is_do_not_remember or self.do_not_remember_flag)


def type_name(value: Any) -> str:
    if isinstance(value, list):
        inner = sorted({type(v).__name__ for v in value})
        return f"a list of {', '.join(inner)}" if inner else "an empty list"
    return {"dict": "an object", "str": "a string", "int": "a number", "float": "a number", "bool": "true/false",
            "NoneType": "null"}.get(type(value).__name__, type(value).__name__)


_EXPECTED = {"string_type": "a string (or a list of text content parts)", "int_type": "a whole number",
             "float_type": "a number", "bool_type": "true/false", "list_type": "a list", "dict_type": "an object",
             "missing": "present", "model_type": "an object", "model_attributes_type": "an object"}


def validate(model: type[BaseModel], obj: Any, *, path: str, sample: str | None = None, position: str,
             build: Any = None) -> Any:
    """``model.model_validate(obj)`` (or ``build(obj)``), a validation error turned into a
    :class:`TranscriptError` naming the field, the type found and the type expected."""
    try:
        return (build or model.model_validate)(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(the record)"
        if err["type"] == "missing":
            message = f"field '{field}' is missing"
        elif err["type"] == "value_error":
            message = f"field '{field}': {err['msg'].removeprefix('Value error, ')}"
        else:
            expected = _EXPECTED.get(err["type"], err["msg"])
            message = f"field '{field}' is {type_name(err.get('input'))}, expected {expected}"
        raise TranscriptError(message, path=path, sample=sample, position=position) from exc
