"""Nothing a store holds or a user types reaches the terminal as a control sequence
(issue 30, Build 7): ``mars inspect`` printed a memory's escape sequences as they were.
Every command's output goes through one printer that shows them escaped (``\\x1b``) and
never reads store text as rich markup."""

from __future__ import annotations

from pathlib import Path

import pytest

from mars_core import HashingEmbedder, MemoryStore
from mars_core.cli import main
from mars_core.io.inspect import printable

KEY = bytes(range(32))
HOSTILE = ("Ana \x1b]0;owned\x07 \x1b[2J\x1b[31mred \x9b31m [bold red]loud[/] [/] "
           "\u202eevil\u202c \u200bhidden")
RAW = ["\x1b", "\x9b", "\x07", "\u202e", "\u200b"]


@pytest.fixture
def path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MARS_AUDIT_KEY", KEY.hex())
    with MemoryStore.open(tmp_path / "s", index="numpy", embedder=HashingEmbedder(dim=32),
                          audit_key=KEY) as store:
        store.add(HOSTILE, namespace="home")
    return tmp_path / "s"


def _said(capsys: pytest.CaptureFixture[str]) -> str:
    out = capsys.readouterr()
    return out.out + out.err


def test_inspect_shows_control_characters_escaped(path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--path", str(path), "-n", "home"]) == 0
    said = _said(capsys)
    assert not any(c in said for c in RAW), repr(said)
    assert "\\x1b" in said  # shown, as an escape
    assert "[bold red]" in said  # store text is never read as markup


def test_every_message_that_echoes_input_is_escaped(path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with MemoryStore.open(path, read_only=True, embedder=HashingEmbedder(dim=32),
                          audit_key=KEY) as store:
        memory_id = store.list("home")[0].id
    for argv in (["explain", memory_id[:8]], ["explain", "\x1b[31mzzzz"],
                 ["inspect", "-n", "a\x1b[2J"], ["erase", "--entity", "Ana\x1b[2J", "-n",
                                                  "home", "--yes"],
                 ["verify", "--head", "\x1b]0;x\x07"]):
        main([*argv, "--path", str(path)])
        said = _said(capsys)
        assert not any(c in said for c in RAW), (argv, repr(said))


def test_printable_escapes_exactly_what_a_terminal_acts_on() -> None:
    assert printable("tab\tand newline\n kept") == "tab\tand newline\n kept"
    assert printable("a\tb\nc", lines=False) == "a\\tb\\nc"
    assert printable("café 東京 🙂") == "café 東京 🙂"
    assert printable("\x00\x7f\x85\u2028\ufeff") == "\\x00\\x7f\\x85\\u2028\\ufeff"
