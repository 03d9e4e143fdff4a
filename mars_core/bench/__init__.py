"""Benchmarks run by ``mars bench ...`` (never inside timed tests).

Examples:
    The storage benchmark at a toy size (``mars bench store --quick`` is the small real
    run): each section's figures per index, ratios against a baseline of the same run.

    >>> from mars_core.bench import storage
    >>> report = storage.run(n=40, block=5, rounds=1, big=0, namespaces=5,
    ...                      indexes=("numpy",), quick=True)
    >>> sorted(report), [(row["index"], row["n"]) for row in report["cost"]]
    (['bulk', 'cost', 'machine', 'peak_rss_mb_of_the_run'], [('numpy', 40)])
"""
