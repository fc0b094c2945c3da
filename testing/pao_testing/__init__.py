"""Test support for pao and its plugins, kept out of the production packages.

Loopback API stubs (Anthropic, OpenAI Responses, Gemini), real-CLI helpers (pinned
CLIs, seeded homes, a private tmux), a throwaway PostgreSQL cluster
(:mod:`pao_testing.postgres`) and the Terminal.app fake (:mod:`pao_testing.terminalapp`).
``scripts/setup --test`` installs this distribution (``pao-testing``); its pytest
fixtures are registered through the ``pytest11`` entry point, so every test under
``tests/`` and ``plugins/*/tests`` can use them.
"""
