"""The LlamaIndex examples run offline (subprocess) and print what they show; the
quick start in the docs is the agent example, verbatim."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["llamaindex_agent.py", "llamaindex_chat_engine.py", "llamaindex_memory_block.py"]
MARK = "===== example: "

# One subprocess runs every example as __main__ (runpy), one after the other: each is
# exercised exactly as `python examples/<name>` would, and LlamaIndex is imported once.
_RUNNER = f"""
import runpy, sys
for name in sys.argv[1:]:
    print({MARK!r} + name, flush=True)
    runpy.run_path("examples/" + name, run_name="__main__")
"""


@pytest.fixture(scope="module")
def outputs() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", _RUNNER, *EXAMPLES], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    parts = done.stdout.split(MARK)[1:]
    return {p.split("\n", 1)[0]: p.split("\n", 1)[1] for p in parts}


def _run(outputs: dict[str, str], name: str) -> str:
    assert name in outputs, f"{name} did not run"
    return outputs[name]


def test_agent_example(outputs: dict[str, str]) -> None:
    out = _run(outputs, "llamaindex_agent.py")
    for agent in ("FunctionAgent", "ReActAgent"):
        assert f"{agent} (alice-{agent}/2) answers: I prefer window seats on trains." in out
        assert f"{agent} bob's session knows about Ana: False" in out


def test_chat_engine_example(outputs: dict[str, str]) -> None:
    out = _run(outputs, "llamaindex_chat_engine.py")
    simple, context = out.split("CondensePlusContextChatEngine; the LLM received:")
    assert "beagle" in simple and "[user] What breed is my dog?" in simple
    assert "Here are the relevant documents" in context and "Monday" in context
    assert re.search(r"after reset, alice's active memories: 0 archived: \d+", out)


def test_memory_block_example(outputs: dict[str, str]) -> None:
    out = _run(outputs, "llamaindex_memory_block.py")
    assert "flushed into MaRS: ['I work at Acme as a welder.'" in out
    used, limit = map(int, re.search(r"(\d+) <= (\d+) tokens", out).groups())  # type: ignore[union-attr]
    assert used <= limit and "The user works at Acme" in out.split("memory.get()")[1]


def test_quick_start_is_the_agent_example() -> None:
    doc = (ROOT / "docs" / "integrations" / "llamaindex.md").read_text()
    quick_start = doc.split("\n## ", 2)[1]  # the page's first section
    assert '--8<-- "examples/llamaindex_agent.py"' in quick_start  # mkdocs includes the file


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_have_a_docstring_saying_how_to_run(name: str) -> None:
    assert f"Run: python examples/{name}" in (ROOT / "examples" / name).read_text()
