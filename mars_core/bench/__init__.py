"""Benchmarks run by ``mars bench ...`` (never inside timed tests).

Examples:
    >>> from mars_core.bench import throughput
    >>> callable(throughput.run)
    True
"""
