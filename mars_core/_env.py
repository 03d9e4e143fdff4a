"""Environment variables, read one way: an empty (or blank) variable counts as unset.

``MARS_EMBEDDER= python app.py`` and ``export MARS_EMBEDDER=""`` are how shells and
container files unset a variable in practice; like the shells' ``${VAR:-default}``, they
mean "the default", never a value to refuse.

Examples:
    >>> import os
    >>> os.environ["MARS_EXAMPLE"] = ""
    >>> env("MARS_EXAMPLE") is None, env("MARS_EXAMPLE", "auto")
    (True, 'auto')
    >>> os.environ["MARS_EXAMPLE"] = "hashing"
    >>> env("MARS_EXAMPLE")
    'hashing'
    >>> del os.environ["MARS_EXAMPLE"]
"""

from __future__ import annotations

import os
from typing import overload

__all__ = ["env"]


@overload
def env(name: str) -> str | None: ...
@overload
def env(name: str, default: str) -> str: ...
def env(name: str, default: str | None = None) -> str | None:
    """The value of the environment variable ``name``; ``default`` when it is unset,
    empty or only blanks."""
    value = os.environ.get(name)
    return value if value is not None and value.strip() else default
