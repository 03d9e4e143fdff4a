"""Benchmarks run by ``mars bench ...`` (never inside timed tests).

Examples:
    >>> from mars_core.bench import storage
    >>> callable(storage.run)
    True
"""
