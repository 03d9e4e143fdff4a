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
    pol = bsub.add_parser("policies", help="per-add and per-trigger cost of each policy vs n")
    pol.add_argument("--quick", action="store_true", help="smoke run: n = 500, 2000")
    pol.add_argument("--n", type=int, action="append", default=None,
                     help="a size every policy runs at (repeatable; 1000, 10000, 100000)")
    pol.add_argument("--big", type=int, default=1_000_000,
                     help="size for fifo/lru/priority/dmf only (1000000; 0 skips it)")
    pol.add_argument("--policies", default=None, help="comma-separated names (all)")
    pol.add_argument("--out", type=Path, default=None, help="directory for policies.json/.md")
    leak = bsub.add_parser("leakage", help="planted PII reaching render_context, privacy off/on")
    leak.add_argument("--turns", type=int, default=120, help="conversation length (120)")
    leak.add_argument("--seed", type=int, default=7, help="generator seed (7)")
    leak.add_argument("--out", type=Path, default=None, help="directory for leakage.json")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mars`` console script."""
    args = _parser().parse_args(argv)
    if args.command == "demo":
        from mars_core import demo

        return demo.main(["--path", str(args.path)] + (["--fresh"] if args.fresh else []))
    if args.bench == "leakage":
        from mars_core.bench import leakage

        leakage.main(args.out, args.turns, args.seed)
        return 0
    if args.bench == "policies":
        from mars_core.bench import policies

        policies.main(tuple(args.n or (1000, 10_000, 100_000)), args.big or None,
                      args.policies.split(",") if args.policies else None, args.out,
                      quick=args.quick)
        return 0
    from mars_core.bench import throughput

    throughput.main(args.n, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
