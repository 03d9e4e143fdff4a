"""The ``mars`` command line.

Example:
    >>> main(["--help"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mars", description="mars-memory: memory that forgets on "
                                "purpose. Commands: demo, bench.")
    sub = p.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="play a multi-session conversation through a store")
    demo.add_argument("--path", type=Path, default=Path("./mars_data/demo"),
                      help="store directory (default ./mars_data/demo)")
    demo.add_argument("--fresh", action="store_true", help="delete the demo store first")
    bench = sub.add_parser("bench", help="run a benchmark")
    bsub = bench.add_subparsers(dest="bench", required=True)
    store = bsub.add_parser("store", help="add throughput and retrieve latency at size n")
    store.add_argument("--n", type=int, default=10_000, help="number of memories (10000)")
    store.add_argument("--out", type=Path, default=None, help="directory for results.json")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mars`` console script."""
    args = _parser().parse_args(argv)
    if args.command == "demo":
        from mars_core import demo

        return demo.main(["--path", str(args.path)] + (["--fresh"] if args.fresh else []))
    from mars_core.bench import throughput

    throughput.main(args.n, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
