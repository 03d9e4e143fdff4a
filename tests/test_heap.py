"""The C heap's arenas (mars_core.index._heap): an embedded Chroma index caps them for the
process when it opens its client, unless told not to or the environment decides.

Each case runs in a fresh interpreter (the cap is process-wide and once). Arenas are
counted from glibc's own report (``malloc_info``) once the store is open, then while six
threads that each allocated wait together at a barrier: glibc gives a thread an arena of
its own on its first allocation while the cap allows (no clock involved). Threads that a
library started before the cap may hold arenas of their own: the cap bounds new ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mars_core.errors import ValidationError
from mars_core.index._heap import cap_arenas, check_arenas

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc")

_CHILD = textwrap.dedent("""
    import ctypes, json, sys, tempfile, threading
    from mars_core import HashingEmbedder, MemoryStore
    from mars_core.index.chroma import ChromaIndex
    from mars_core.index._heap import cap_arenas

    def heaps():
        libc = ctypes.CDLL("libc.so.6")
        libc.fopen.restype = ctypes.c_void_p
        out = libc.fopen((sys.argv[1] + "/heap.xml").encode(), b"w")
        libc.malloc_info(0, ctypes.c_void_p(out))
        libc.fclose(ctypes.c_void_p(out))
        return open(sys.argv[1] + "/heap.xml").read().count("<heap nr=")

    arenas = json.loads(sys.argv[2])
    index = ChromaIndex(path=sys.argv[1] + "/index", malloc_arenas=arenas)
    with MemoryStore(index=index, embedder=HashingEmbedder()) as store:
        store.add("Ana lives in Porto")  # the client opens
        capped = cap_arenas(None)  # what the process set, without setting anything
        before = heaps()
        held, ready = [], threading.Barrier(7)

        def work():
            held.append(bytearray(50_000))  # malloc'd in this thread (below mmap's size)
            ready.wait()
            ready.wait()
        threads = [threading.Thread(target=work) for _ in range(6)]
        for t in threads:
            t.start()
        ready.wait()  # all six hold their allocation
        after = heaps()
        ready.wait()
        for t in threads:
            t.join()
    print(json.dumps({"capped": capped, "before": before, "heaps": after}))
""")


def _child(tmp_path: Path, arenas: int | None, env: dict[str, str] | None = None
           ) -> dict[str, int | None]:
    pytest.importorskip("chromadb")
    environ = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path), json.dumps(arenas)],
                          env={**environ, **(env or {})}, capture_output=True, text=True,
                          check=True, timeout=60)
    out: dict[str, int | None] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def test_an_embedded_chroma_index_caps_the_arenas_of_its_process(tmp_path: Path) -> None:
    seen = _child(tmp_path, 2)
    assert seen["capped"] == 2 and seen["before"] is not None
    assert seen["heaps"] == max(2, seen["before"])  # six more threads, no more arenas


def test_without_the_cap_each_thread_takes_an_arena(tmp_path: Path) -> None:
    """What the cap bounds: the same six threads, the arenas left as they are."""
    seen = _child(tmp_path, None)
    assert seen["capped"] is None and seen["heaps"] is not None
    assert seen["heaps"] >= 7  # the main arena and one for each thread holding memory


def test_the_environment_decides_when_it_says(tmp_path: Path) -> None:
    seen = _child(tmp_path, 2, {"MALLOC_ARENA_MAX": "4"})
    assert seen["capped"] is None and seen["heaps"] == 4


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "2"])
def test_a_bad_cap_is_refused(bad: object) -> None:
    with pytest.raises(ValidationError, match="malloc arenas must be a positive int"):
        check_arenas(bad)
    with pytest.raises(ValidationError, match="malloc arenas must be a positive int"):
        cap_arenas(bad)  # type: ignore[arg-type]
    pytest.importorskip("chromadb")
    from mars_core.index.chroma import ChromaIndex

    with pytest.raises(ValidationError, match="malloc arenas must be a positive int"):
        ChromaIndex(malloc_arenas=bad)  # type: ignore[arg-type]
