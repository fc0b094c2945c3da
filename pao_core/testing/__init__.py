"""Test support shipped with pao-core: a loopback Messages API stub, real-CLI helpers, pytest fixtures.

Nothing here is imported by ``pao_core`` itself; tests, benches and plugin test
suites import it. The pytest fixtures are registered through the ``pytest11``
entry point, so every test under ``tests/`` and ``plugins/*/tests`` can use them.
"""
