"""Every ``python -m memsif …`` command that README.md and docs/ show parses as written.

A command is taken from a fenced code block (continuation lines joined, comments dropped) or an inline code
span. Its synopsis marks are read as a person reads them: ``[…]`` optional parts are included, ``a|b|c``
alternatives are each tried (the first alternative of any further group), ``…`` after an option is a value
and is dropped elsewhere, and an UPPER-CASE placeholder stands for itself, or for the first choice of an
option that takes only some values, or for 1 where a number is due; ``NAME[.gz]`` is a name with an
optional suffix. A mention in prose may leave out
what a command requires ("`python -m memsif export`"), so a missing required argument or a trailing option
without its value passes; an unrecognised argument, an unknown sub-command or choice, or a value of the wrong
type fails.
"""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from memsif import cli
from tests import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND = "python -m memsif"
#: What a mention may leave out (argparse's words).
INCOMPLETE = ("the following arguments are required", "expected one argument")


def _from_blocks(text: str) -> list[str]:
    found, inside, pending = [], False, ""
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            inside, pending = not inside, ""
            continue
        if not inside:
            continue
        line = pending + " " + line.strip() if pending else line
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1]
            continue
        pending = ""
        if COMMAND in line:
            found.append(re.split(r"\s#\s|\s{2,}#", line[line.index(COMMAND):])[0])
    return found


def _from_spans(text: str) -> list[str]:
    outside = re.sub(r"```.*?```", "", text, flags=re.S)
    return [span for span in re.findall(r"`([^`\n]*)`", outside) if span.startswith(COMMAND)]


def documented() -> list[tuple[str, str]]:
    """(where, command) for every command the docs show."""
    out = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for command in dict.fromkeys(_from_blocks(text) + _from_spans(text)):
            out.append((path.name, command.replace("\\|", "|").strip()))
    return out


def forms(command: str) -> list[list[str]]:
    """The argv lists a synopsis stands for (without ``python -m memsif``)."""
    text = re.sub(r"(?<=\S)\[([^\]\s]*)\]", r"\1", command[len(COMMAND):])  # "OUT.json[.gz]": a suffix
    words = shlex.split(text.replace("[", " ").replace("]", " "))
    argv: list[str] = []
    for k, word in enumerate(words):
        if word in ("…", "..."):
            if argv and argv[-1].startswith("--") and k + 1 < len(words) and not words[k + 1].startswith("-"):
                continue
            if argv and argv[-1].startswith("--"):
                argv.append("X")  # "--model …": a value
            continue
        argv.append(word.rstrip("…").replace("…", "") or word)
    choices = next((k for k, w in enumerate(argv) if "|" in w and not w.startswith("-")), None)
    first = [w.split("|")[0] if "|" in w else w for w in argv]
    if choices is None:
        return [first]
    return [[*first[:choices], option, *first[choices + 1:]] for option in argv[choices].split("|")]


class _Refused(Exception):
    pass


CASES = [(where, command, argv) for where, command in documented() for argv in forms(command)]


def test_the_docs_show_the_commands_a_person_runs():
    shown = {" ".join(argv[:2]) for _, _, argv in CASES}
    for needed in ("facts edit", "facts delete", "facts restore", "ingest", "ask", "eval locomo", "export"):
        assert any(s.startswith(needed) for s in shown), f"no documented `python -m memsif {needed}`"
    assert len(CASES) >= 50


@pytest.mark.parametrize(("where", "command", "argv"), CASES, ids=[f"{w}:{' '.join(a)[:60]}" for w, _, a in CASES])
def test_a_documented_command_parses(monkeypatch, where, command, argv):
    def refuse(self, message):
        raise _Refused(message)

    monkeypatch.setattr(argparse.ArgumentParser, "error", refuse)
    argv = list(argv)
    for _ in range(len(argv) + 1):
        try:
            cli.build_parser().parse_args(argv)
            return
        except _Refused as exc:
            said = str(exc)
        placeholder = re.search(r"invalid choice: '([A-Z][A-Z0-9_]*)' \(choose from '([^']+)'", said)
        if placeholder and placeholder[1] in argv:  # "--format F": F stands for one of the choices
            argv[argv.index(placeholder[1])] = placeholder[2]
            continue
        number = re.search(r"invalid (?:int|float) value: '([A-Z][A-Z0-9_]*)'", said)
        if number and number[1] in argv:  # "--limit N"
            argv[argv.index(number[1])] = "1"
            continue
        if not said.startswith(INCOMPLETE):
            pytest.fail(f"{where}: `{command}` as {argv} is refused: {said}")
        return
