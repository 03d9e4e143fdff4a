"""Root pytest configuration: what every collected file needs, the library's doctests too.

``MemoryStore()`` without an embedder takes the best one installed (all-MiniLM-L6-v2
with the ``semantic`` extra), as ``MemoryStore.open`` does. The doctests of
``mars_core``, ``langchain_mars`` and ``llamaindex_mars`` build such stores and are not
under ``tests/``, whose conftest sets the same variable, so without this they would load
the model and rank by it when run on their own (``pytest mars_core/store.py``). The
hashing embedder keeps them fast and their outputs exact; a shell that sets
``MARS_EMBEDDER`` keeps its choice.
"""

from __future__ import annotations

import os

os.environ.setdefault("MARS_EMBEDDER", "hashing")
