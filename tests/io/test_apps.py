"""Histories exported by messaging apps (Telegram Desktop, DiscordChatExporter, Messenger and Instagram, Slack),
written from each app's documented layout: read with speakers, times, one session per day and what is not
speech left out and counted; a JSON file of none of the known layouts is refused naming what it looks like.
Every path reads files with the same loader (``load_transcripts``): the Python API and the page are tried."""

import json
import zipfile
from datetime import datetime

import pytest

from memsif.errors import TranscriptError
from memsif.io import load_transcripts
from memsif.io.apps import facebook_text
from tests.fakes import FakeLLM

TELEGRAM_CHAT = {
    "name": "Ben", "type": "personal_chat", "id": 4242,
    "messages": [
        {"id": 1, "type": "message", "date": "2024-04-12T09:01:00", "date_unixtime": "1712912460", "from": "Ana",
         "from_id": "user1", "text": "I adopted a beagle named Max!", "text_entities": []},
        {"id": 2, "type": "service", "date": "2024-04-12T09:02:00", "actor": "Ben", "action": "phone_call",
         "duration_seconds": 60, "text": ""},
        {"id": 3, "type": "message", "date": "2024-04-12T09:03:00", "from": "Ben", "from_id": "user2",
         "text": ["What a ", {"type": "bold", "text": "great"}, " name"], "edited": "2024-04-12T09:04:00"},
        {"id": 4, "type": "message", "date": "2024-04-13T10:00:00", "from": "Ana", "photo": "photos/photo_1.jpg",
         "width": 800, "height": 600, "text": "Max at the park"},
        {"id": 5, "type": "message", "date": "2024-04-13T10:01:00", "from": "Ben",
         "file": "(File not included. Change data exporting settings to download.)", "media_type": "sticker",
         "sticker_emoji": "😀", "text": ""},
    ]}
TELEGRAM_SAID = [("1", "Ana", "I adopted a beagle named Max!", "2024-04-12 09:01"),
                 ("3", "Ben", "What a great name", "2024-04-12 09:03"),
                 ("4", "Ana", "[attachment: photo_1.jpg]\nMax at the park", "2024-04-13 10:00")]

DISCORD = {
    "guild": {"id": "1", "name": "Dog owners", "iconUrl": ""},
    "channel": {"id": "2", "type": "GuildTextChat", "categoryId": "3", "category": "Text", "name": "beagles",
                "topic": None},
    "dateRange": {"after": None, "before": None}, "exportedAt": "2024-04-20T12:00:00+02:00",
    "messages": [
        {"id": "100", "type": "Default", "timestamp": "2024-04-12T09:01:00.123+02:00", "timestampEdited": None,
         "isPinned": False, "content": "I adopted a beagle named Max!",
         "author": {"id": "u1", "name": "ana_b", "discriminator": "0000", "nickname": "Ana", "isBot": False},
         "attachments": [], "embeds": [], "stickers": [], "reactions": [], "mentions": []},
        {"id": "101", "type": "GuildMemberJoin", "timestamp": "2024-04-12T09:02:00+02:00", "content": "",
         "author": {"id": "u2", "name": "ben", "nickname": "Ben"}, "attachments": []},
        {"id": "102", "type": "Reply", "timestamp": "2024-04-12T09:03:00+02:00", "content": "Show us!",
         "author": {"id": "u2", "name": "ben", "nickname": "Ben"}, "attachments": [],
         "reference": {"messageId": "100"}},
        {"id": "103", "type": "Default", "timestamp": "2024-04-12T09:04:00+02:00", "content": "",
         "author": {"id": "u1", "name": "ana_b", "nickname": "Ana"},
         "attachments": [{"id": "a1", "url": "https://cdn.example/max.jpg", "fileName": "max.jpg",
                          "fileSizeBytes": 1000}]},
    ], "messageCount": 4}
DISCORD_SAID = [("100", "Ana", "I adopted a beagle named Max!", "2024-04-12 09:01"),
                ("102", "Ben", "Show us!", "2024-04-12 09:03"),
                ("103", "Ana", "[attachment: max.jpg]", "2024-04-12 09:04")]


def _mojibake(text: str) -> str:
    """Text as Messenger's export writes it: each UTF-8 byte a character."""
    return text.encode("utf-8").decode("latin-1")


MESSENGER = {
    "participants": [{"name": _mojibake("Zoë")}, {"name": "Ben"}],
    "messages": [  # newest first, as the export writes them
        {"sender_name": "Ben", "timestamp_ms": 1712913000000, "content": "Ana sent an attachment.",
         "is_geoblocked_for_viewer": False},
        {"sender_name": _mojibake("Zoë"), "timestamp_ms": 1712912700000, "call_duration": 60,
         "content": "The video chat ended.", "type": "Call"},
        {"sender_name": "Ben", "timestamp_ms": 1712912580000, "content": _mojibake("Café after? ☕"),
         "photos": [{"uri": "messages/inbox/ben_1/photos/12345.jpg", "creation_timestamp": 1712912580}]},
        {"sender_name": _mojibake("Zoë"), "timestamp_ms": 1712912460000, "content": "I adopted a beagle named Max!"},
    ],
    "title": "Ben", "is_still_participant": True, "thread_path": "inbox/ben_1", "magic_words": []}
MESSENGER_SAID = [("Zoë", "I adopted a beagle named Max!", "2024-04-12 09:01"),
                  ("Ben", "[attachment: 12345.jpg]\nCafé after? ☕", "2024-04-12 09:03")]

SLACK_USERS = [{"id": "U1", "name": "ana", "real_name": "Ana Lopez", "profile": {"display_name": "Ana"}},
               {"id": "U2", "name": "ben", "real_name": "Ben Roy", "profile": {"display_name": ""}}]
SLACK_DAY = [
    {"type": "message", "subtype": "channel_join", "ts": "1712912400.000100", "user": "U2",
     "text": "<@U2> has joined the channel"},
    {"type": "message", "ts": "1712912460.000200", "user": "U1", "text": "I adopted a beagle named Max!",
     "user_profile": {"display_name": "Ana", "real_name": "Ana Lopez"}},
    {"type": "message", "ts": "1712912580.000300", "user": "U2",
     "text": "<@U1> great name! See <https://dogs.example/beagle|beagles> &amp; more",
     "files": [{"id": "F1", "name": "max.png", "title": "Max"}]},
]
SLACK_SAID = [("1712912460.000200", "Ana", "I adopted a beagle named Max!", "2024-04-12 09:01"),
              ("1712912580.000300", "Ben Roy",
               "[attachment: max.png]\n@Ana great name! See beagles (https://dogs.example/beagle) & more",
               "2024-04-12 09:03")]


def _said(t, ids: bool = True):
    return [((m.id,) if ids else ()) + (m.speaker, m.text, m.time.strftime("%Y-%m-%d %H:%M")) for m in t.messages]


def _write(tmp_path, name: str, data) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return str(path)


def test_a_telegram_chat_and_the_full_export_are_read_with_speakers_times_and_days(tmp_path):
    [t] = load_transcripts(_write(tmp_path, "result.json", TELEGRAM_CHAT))
    assert (t.format, t.sample_id, t.title) == ("telegram", "Ben", "Ben")
    assert _said(t) == TELEGRAM_SAID
    assert [m.session_id for m in t.messages] == ["2024-04-12", "2024-04-12", "2024-04-13"]
    assert any("left out 2 of the app's own lines" in w and "1 service lines" in w for w in t.warnings), t.warnings
    full = {"about": "Here is the data you requested.", "personal_information": {"first_name": "Ana"},
            "chats": {"about": "This is the list of all chats.",
                      "list": [TELEGRAM_CHAT, {**TELEGRAM_CHAT, "name": "Cleo", "id": 7},
                               {"name": "Empty", "type": "personal_chat", "id": 8, "messages": []}]}}
    chats = load_transcripts(_write(tmp_path, "full.json", full))
    assert [c.sample_id for c in chats] == ["Ben", "Cleo"] and all(_said(c) == TELEGRAM_SAID for c in chats)
    [cleo] = load_transcripts(_write(tmp_path, "full.json", full), sample="Cleo")
    assert cleo.sample_id == "Cleo"


def test_a_discord_channel_export_is_read_with_nicknames_wall_clock_times_and_attachments(tmp_path):
    [t] = load_transcripts(_write(tmp_path, "Dog owners - beagles [2].json", DISCORD))
    assert (t.format, t.sample_id) == ("discord", "Dog owners #beagles")
    assert _said(t) == DISCORD_SAID
    assert any("1 service lines (joins, pins, calls)" in w for w in t.warnings), t.warnings


def test_a_messenger_or_instagram_thread_is_read_in_time_order_with_its_text_decoded(tmp_path):
    [t] = load_transcripts(_write(tmp_path, "message_1.json", MESSENGER))
    assert (t.format, t.sample_id) == ("messenger", "Ben")
    assert _said(t, ids=False) == MESSENGER_SAID
    assert [m.id for m in t.messages] == ["2024-04-12:1", "2024-04-12:2"]
    assert any("1 calls and people joining or leaving" in w and "1 placeholders" in w for w in t.warnings)
    assert facebook_text("plain text") == "plain text" and facebook_text("naïve") == "naïve"  # already text: kept


def test_a_slack_day_file_and_a_slack_export_zip_or_folder_are_read_by_channel(tmp_path):
    [day] = load_transcripts(_write(tmp_path, "2024-04-12.json", SLACK_DAY))
    assert day.format == "slack" and [m.speaker for m in day.messages] == ["Ana", "U2"]  # no users.json: ids
    export = tmp_path / "Dogs Slack export Apr 12 2024"
    (export / "general").mkdir(parents=True)
    (export / "random").mkdir()
    for name, data in (("users.json", SLACK_USERS), ("channels.json", [{"id": "C1", "name": "general"}]),
                       ("general/2024-04-12.json", SLACK_DAY),
                       ("random/2024-04-13.json", [{"type": "message", "ts": "1713002400.0", "user": "U2",
                                                    "text": "Walk at 6?"}])):
        (export / name).write_text(json.dumps(data), encoding="utf-8")
    channels = load_transcripts(export)
    assert [c.sample_id for c in channels] == ["general", "random"]
    assert _said(channels[0]) == SLACK_SAID and channels[1].messages[0].speaker == "Ben Roy"
    zipped = tmp_path / "slack.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        for f in export.rglob("*.json"):
            archive.write(f, f"{export.name}/{f.relative_to(export).as_posix()}")
    assert [_said(c) for c in load_transcripts(zipped)] == [_said(c) for c in channels]


@pytest.mark.parametrize(("data", "looks"), [
    ({"messages": [{"sender": "Ana", "body": "hi"}]}, "its messages' keys: body, sender"),
    ([{"author": "Ana", "message": "hi"}], "the file's keys: author, message"),
])
def test_a_json_file_of_no_known_layout_is_refused_naming_every_layout_read_and_what_it_holds(tmp_path, data, looks):
    with pytest.raises(TranscriptError) as refused:
        load_transcripts(_write(tmp_path, "export.json", data))
    said = str(refused.value)
    for layout in ("Telegram Desktop's result.json", "DiscordChatExporter", "Messenger or Instagram", "Slack",
                   "OpenAI messages"):
        assert layout in said, said
    assert looks in said and "field 'role' is missing" not in said


@pytest.mark.parametrize(("name", "data"), [("result.json", TELEGRAM_CHAT), ("discord.json", DISCORD),
                                            ("message_1.json", MESSENGER)])
def test_no_app_export_is_taken_for_an_openai_message_list(tmp_path, name, data):
    [t] = load_transcripts(_write(tmp_path, name, data))
    assert t.format != "openai" and all(m.time is not None for m in t.messages)


def test_the_page_builds_a_memory_from_a_telegram_export(tmp_path, engine_factory):
    from memsif.inspector.build import BuildTab
    from memsif.inspector.common import Inspector

    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5}))
    *_, (ns, source, summary, _fig, _rows) = list(BuildTab(Inspector(engine)).build(
        _write(tmp_path, "result.json", TELEGRAM_CHAT), None, "ui-0123456789ab", None, None,
        progress=lambda *a, **k: None))
    assert not source.failed, summary
    assert [(m.speaker, m.time) for m in engine.messages(ns)] == [
        ("Ana", datetime(2024, 4, 12, 9, 1)), ("Ben", datetime(2024, 4, 12, 9, 3)), ("Ana", datetime(2024, 4, 13, 10))]
