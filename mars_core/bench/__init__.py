"""Benchmarks run by ``mars bench ...`` (never inside timed tests).

Example:
    >>> from mars_core.bench import throughput
    >>> callable(throughput.run)
    True
"""
