"""Repository-wide pytest set-up.

The real-CLI fixtures come from the ``pao-testing`` distribution (``testing/``), registered
through its ``pytest11`` entry point; this file keeps the repository root importable.
"""
