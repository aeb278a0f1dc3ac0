"""Histories as messaging apps export them in JSON: Telegram Desktop (``result.json``, one chat or the full
export), DiscordChatExporter (a channel's JSON), Facebook Messenger and Instagram (``message_1.json``), and a
Slack export (a channel's day files ``2024-04-12.json``, or the export's ZIP or folder with ``users.json``
and ``channels.json``).

Each chat becomes one history: its speakers as the app names them, its times (Telegram and Discord as the
exporter's clock showed them; Messenger, Instagram and Slack from their epoch times, in UTC), one session
per day, ids from the file where it has them. What is not what someone said is left out and counted in the
load's warnings: the app's own service lines (people joining, calls, pins), and messages that are only the
app's placeholder ("Ana sent an attachment."). A file sent with a message is marked ``[attachment:
<name>]`` as other formats mark theirs, its caption after it. Messenger's and Instagram's exports write
UTF-8 bytes as separate characters ("CafÃ©"): their text is read back as written ("Café").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from memsif.errors import TranscriptError
from memsif.records import Message
from memsif.timeparse import parse_time

#: The apps' JSON layouts this module reads, as ``--format`` names them.
APP_FORMATS = ("telegram", "discord", "messenger", "slack")
#: What each layout looks like, for the error that refuses an unknown one.
APP_LAYOUTS = ("Telegram Desktop's result.json (needs 'messages' with 'date' and 'from', or 'chats')",
               "DiscordChatExporter's JSON (needs 'guild', 'channel' and 'messages')",
               "Messenger or Instagram's message_1.json (needs 'participants' and 'messages' with 'sender_name')",
               "a Slack export's day file (a list of messages with 'ts')")
#: Discord message types that are someone's words; the rest (joins, pins, calls, boosts) are the app's.
_DISCORD_SAID = {"Default", "Reply", "ThreadStarterMessage"}
#: Messenger message types that are the app's own (calls, people added or leaving).
_MESSENGER_APP = {"Call", "Subscribe", "Unsubscribe"}
#: Slack subtypes that are the app's own lines (joins, topic changes, …); a bot's or a file's message is said.
_SLACK_APP = re.compile(r"channel_\w+|group_\w+|pinned_item|unpinned_item|tombstone|reminder_add|sh_room_\w+")
#: The placeholders Messenger and Instagram write in a message's place.
_PLACEHOLDER = re.compile(r".{1,80} (?:sent an attachment|sent a photo|sent a video|sent a voice message|"
                          r"shared a story|liked a message|reacted .{1,8} to (?:your|a) message)\.?", re.IGNORECASE)
_NOT_EXPORTED = "(File not included. Change data exporting settings to download.)"


@dataclass
class AppChat:
    """One chat of an app's export, read: its name, messages (in time order, numbered 0…n-1, ``namespace``
    the name), the load's warnings, and whether the ids come from the file."""

    name: str
    messages: list[Message]
    warnings: list[str] = field(default_factory=list)
    source_ids: bool = True


@dataclass
class _Said:
    """One message as an app wrote it, before sessions and ids: id (None: numbered), speaker, text, time."""

    id: str | None
    speaker: str
    text: str
    time: datetime | None


def app_of(data: Any) -> str | None:
    """The app whose JSON layout ``data`` is (one of ``APP_FORMATS``), else None."""
    if isinstance(data, dict):
        messages = data.get("messages")
        first = messages[0] if isinstance(messages, list) and messages and isinstance(messages[0], dict) else {}
        if isinstance(data.get("chats"), dict) and isinstance(data["chats"].get("list"), list):
            return "telegram"
        if "guild" in data and "channel" in data and isinstance(messages, list):
            return "discord"
        if "participants" in data and isinstance(messages, list) and (not first or "sender_name" in first):
            return "messenger"
        if isinstance(messages, list) and first and "date" in first and ("from" in first or "type" in first):
            return "telegram"
    if isinstance(data, list) and data and all(isinstance(x, dict) for x in data) and all("ts" in x for x in data):
        return "slack"
    return None


def load_app(fmt: str, data: Any, path: str, users: dict[str, str] | None = None,
             name: str | None = None) -> list[AppChat]:
    """The chats of an app's export ``data`` in layout ``fmt`` (``APP_FORMATS``); ``users`` maps Slack user
    ids to names (the export's ``users.json``), ``name`` names a Slack channel.

    Raises:
        TranscriptError: a field of the wrong type, or a chat without messages.
    """
    if fmt == "telegram":
        chats = [(k, c) for k, c in enumerate(_obj(data.get("chats")).get("list") or [data])
                 if isinstance(c, dict) and isinstance(c.get("messages"), list) and c["messages"]]
        if not chats:
            raise TranscriptError("the transcript holds no messages (no chat of the Telegram export holds messages)",
                                  path=path)
        return [_telegram(chat, path, k) for k, chat in chats]
    if fmt == "discord":
        return [_discord(data, path)]
    if fmt == "messenger":
        return [_messenger(data, path)]
    return [_slack(data, path, users or {}, name or PurePosixPath(path).stem)]


def _obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else {} (a field an app left out or wrote as null)."""
    return value if isinstance(value, dict) else {}


def _chat(name: str, said: Sequence[_Said], left_out: Counter[str], path: str, source_ids: bool = True) -> AppChat:
    """An ``AppChat`` of ``said`` (any order): sorted by time, one session per day, ids from the file or
    ``<day>:<n>``; ``left_out`` counts what was left out, by kind, for the warning."""
    turns: Counter[str] = Counter()
    messages: list[Message] = []
    for s in sorted(said, key=lambda s: (s.time is None, s.time or datetime.min)):
        session = s.time.date().isoformat() if s.time else "1"
        turns[session] += 1
        mid = s.id if source_ids and s.id else f"{session if s.time else 'D1'}:{turns[session]}"
        messages.append(Message(id=mid, namespace=name, speaker=s.speaker.strip() or "?", text=s.text, time=s.time,
                                session_id=session, index=len(messages)))
    if not messages:
        raise TranscriptError(f"the chat {name!r} holds no messages anyone wrote", path=path)
    warnings = []
    if left_out:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(left_out.items(), key=lambda kv: (-kv[1], kv[0])))
        warnings.append(f"{name}: left out {sum(left_out.values())} of the app's own lines, not what anyone said "
                        f"({kinds})")
    return AppChat(name, messages, warnings, source_ids)


def _attachments(names: Sequence[str], caption: str) -> str:
    """A message's text with its files marked as other formats mark theirs, the caption after them."""
    marks = [f"[attachment: {PurePosixPath(n).name}]" for n in names if n]
    return "\n".join([*marks, caption] if caption else marks)


def _messages_of(chat: dict[str, Any], path: str, what: str) -> list[dict[str, Any]]:
    items = chat.get("messages")
    if not isinstance(items, list):
        raise TranscriptError(f"{what}: 'messages' must be a list", path=path)
    for k, m in enumerate(items):
        if not isinstance(m, dict):
            raise TranscriptError(f"{what}: each message must be a JSON object", path=path, position=f"message {k}")
    return items


def _epoch(value: Any, scale: float, path: str, position: str) -> datetime | None:
    if value is None or value == "":
        return None
    try:
        return datetime.fromtimestamp(float(value) / scale, UTC).replace(tzinfo=None)
    except (TypeError, ValueError, OverflowError, OSError) as exc:
        raise TranscriptError(f"unreadable time {value!r}", path=path, position=position) from exc


def _wall_clock(value: Any, path: str, position: str) -> datetime | None:
    """An ISO time as the exporter's clock showed it (its offset dropped)."""
    if value is None or value == "":
        return None
    with suppress(ValueError):
        return datetime.fromisoformat(str(value)).replace(tzinfo=None)
    try:
        return parse_time(str(value)).replace(tzinfo=None)
    except ValueError as exc:
        raise TranscriptError(f"unreadable date {value!r}", path=path, position=position) from exc


# ---------------------------------------------------------------------------------------- Telegram
def _telegram_text(value: Any) -> str:
    """Telegram's text: a string, or a list of strings and styled parts ({"type": "bold", "text": …})."""
    if isinstance(value, list):
        return "".join(p if isinstance(p, str) else str(_obj(p).get("text", "")) for p in value)
    return value if isinstance(value, str) else ""


def _telegram(chat: dict[str, Any], path: str, k: int) -> AppChat:
    name = str(chat.get("name") or ("Saved Messages" if chat.get("type") == "saved_messages" else f"chat {k + 1}"))
    said: list[_Said] = []
    left_out: Counter[str] = Counter()
    for j, m in enumerate(_messages_of(chat, path, f"Telegram chat {name!r}")):
        if m.get("type", "message") != "message":
            left_out["service lines (calls, joins, pins)"] += 1
            continue
        files = [str(m[key]) for key in ("photo", "file") if m.get(key) and m[key] != _NOT_EXPORTED]
        text = _attachments(files, _telegram_text(m.get("text")).strip())
        if not text:
            left_out["stickers or files not in the export" if m.get("media_type") or m.get("photo") or
                     m.get("file") else "empty messages"] += 1
            continue
        when = _wall_clock(m.get("date"), path, f"{name}, message {j}")
        said.append(_Said(f"{m['id']}" if m.get("id") is not None else None,
                          str(m.get("from") or m.get("actor") or "?"), text, when))
    return _chat(name, said, left_out, path)


# ----------------------------------------------------------------------------------------- Discord
def _discord(data: dict[str, Any], path: str) -> AppChat:
    channel, guild = _obj(data.get("channel")), _obj(data.get("guild"))
    name = str(channel.get("name") or "channel")
    if guild.get("name") and guild.get("name") != "Direct Messages":
        name = f"{guild['name']} #{name}"
    said: list[_Said] = []
    left_out: Counter[str] = Counter()
    for j, m in enumerate(_messages_of(data, path, f"Discord channel {name!r}")):
        if m.get("type", "Default") not in _DISCORD_SAID:
            left_out["service lines (joins, pins, calls)"] += 1
            continue
        author = _obj(m.get("author"))
        files = [str(a.get("fileName") or a.get("url") or "") for a in m.get("attachments") or []
                 if isinstance(a, dict)]
        text = _attachments(files, str(m.get("content") or "").strip())
        if not text:
            left_out["messages with only embeds or stickers"] += 1
            continue
        who = str(author.get("nickname") or author.get("name") or "?")
        said.append(_Said(str(m["id"]) if m.get("id") else None, who, text,
                          _wall_clock(m.get("timestamp"), path, f"message {j}")))
    return _chat(name, said, left_out, path)


# ------------------------------------------------------------------------------ Messenger, Instagram
def facebook_text(value: str) -> str:
    """Text as Messenger and Instagram meant it: their exports write each UTF-8 byte as a character
    ("CafÃ©", "ð\\x9f\\x98\\x8a"); text that is not so encoded is returned as it is."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


def _messenger(data: dict[str, Any], path: str) -> AppChat:
    people = [facebook_text(str(p.get("name", ""))) for p in data.get("participants") or [] if isinstance(p, dict)]
    name = facebook_text(str(data.get("title") or " & ".join(people) or "chat"))
    said: list[_Said] = []
    left_out: Counter[str] = Counter()
    for j, m in enumerate(_messages_of(data, path, f"Messenger chat {name!r}")):
        content = facebook_text(str(m.get("content") or "")).strip()
        if m.get("type") in _MESSENGER_APP or "call_duration" in m:
            left_out["calls and people joining or leaving"] += 1
            continue
        files = [str(f.get("uri", "")) for key in ("photos", "videos", "audio_files", "files", "gifs")
                 for f in m.get(key) or [] if isinstance(f, dict)]
        if isinstance(m.get("sticker"), dict):
            files.append(str(m["sticker"].get("uri", "sticker")))
        if _PLACEHOLDER.fullmatch(content):
            content = ""
        text = _attachments(files, content)
        if not text:
            left_out["placeholders (an attachment, a reaction, a shared story)"] += 1
            continue
        said.append(_Said(None, facebook_text(str(m.get("sender_name") or "?")), text,
                          _epoch(m.get("timestamp_ms"), 1000.0, path, f"message {j}")))
    return _chat(name, said, left_out, path, source_ids=False)


# -------------------------------------------------------------------------------------------- Slack
def _slack(items: list[dict[str, Any]], path: str, users: dict[str, str], name: str) -> AppChat:
    said: list[_Said] = []
    left_out: Counter[str] = Counter()
    for j, m in enumerate(items):
        subtype = str(m.get("subtype") or "")
        if m.get("type", "message") != "message" or _SLACK_APP.fullmatch(subtype):
            left_out["service lines (joins, topics, pins)"] += 1
            continue
        profile = _obj(m.get("user_profile"))
        who = (profile.get("display_name") or profile.get("real_name") or users.get(str(m.get("user")))
               or m.get("username") or m.get("user") or "?")
        files = [str(f.get("name") or f.get("title") or "") for f in m.get("files") or [] if isinstance(f, dict)]
        text = _attachments(files, _slack_text(str(m.get("text") or ""), users).strip())
        if not text:
            left_out["empty messages"] += 1
            continue
        said.append(_Said(str(m["ts"]), str(who), text, _epoch(m.get("ts"), 1.0, path, f"message {j}")))
    return _chat(name, said, left_out, path)


_SLACK_MENTION = re.compile(r"<@(U[A-Z0-9]+)(?:\|[^>]*)?>")
_SLACK_LINK = re.compile(r"<(https?://[^>|]+)(?:\|([^>]+))?>")


def _slack_text(text: str, users: dict[str, str]) -> str:
    """Slack's markup as a person reads it: "<@U123>" → "@Ana", "<https://x|label>" → "label (https://x)"."""
    text = _SLACK_MENTION.sub(lambda m: "@" + users.get(m.group(1), m.group(1)), text)
    text = _SLACK_LINK.sub(lambda m: f"{m.group(2)} ({m.group(1)})" if m.group(2) else m.group(1), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def slack_users(data: Any) -> dict[str, str]:
    """User id → the name people see, from a Slack export's ``users.json``."""
    out = {}
    for u in data if isinstance(data, list) else []:
        if isinstance(u, dict) and u.get("id"):
            profile = _obj(u.get("profile"))
            out[str(u["id"])] = str(profile.get("display_name") or u.get("real_name") or u.get("name") or u["id"])
    return out


def slack_channels(files: Sequence[tuple[str, bytes]], read: Callable[[bytes, str], Any],
                   path: str) -> list[AppChat]:
    """Every channel of a Slack export whose files (``(name, bytes)``, names relative to the export) are
    given: ``users.json`` names the people, each ``<channel>/<YYYY-MM-DD>.json`` holds a day of its channel;
    ``read(bytes, name)`` parses one JSON file.

    Raises:
        TranscriptError: a day file that is not a list of messages, or an export without one.
    """
    users = next((slack_users(read(data, n)) for n, data in files if PurePosixPath(n).name == "users.json"), {})
    by_channel: dict[str, list[dict[str, Any]]] = {}
    for n, data in sorted(files):
        parts = PurePosixPath(n).parts
        if len(parts) >= 2 and re.fullmatch(r"\d{4}-\d{2}-\d{2}\.json", parts[-1]):
            day = read(data, n)
            if not isinstance(day, list):
                raise TranscriptError(f"{n} is not a list of Slack messages", path=path)
            by_channel.setdefault(parts[-2], []).extend(x for x in day if isinstance(x, dict))
    if not by_channel:
        raise TranscriptError("the Slack export holds no channel day files (<channel>/2024-04-12.json)", path=path)
    return [_slack(items, path, users, channel) for channel, items in sorted(by_channel.items())]


def is_slack_export(names: Sequence[str]) -> bool:
    """Whether a ZIP's or folder's file ``names`` are a Slack export's: ``users.json`` and ``channels.json``
    (or ``dms.json``) at its top."""
    tops = {Path(n).name for n in names if len(PurePosixPath(n).parts) <= 2}
    return "users.json" in tops and bool(tops & {"channels.json", "dms.json", "groups.json"})
