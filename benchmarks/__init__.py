"""The benchmark suite (``python -m benchmarks``): not tests, never run by ``pytest``.

Every figure is measured against a baseline in the same run on the local stack of
real servers, and reported as a ratio. See ``benchmarks/__main__.py``.
"""
