"""Host-agent profiles: everything specific to one coding-agent CLI.

``pao_core.hosts.claude_code`` is a default plugin: it contributes the Claude Code
profile (command line, context import, trust pre-seeding, transcripts) and its
screen detector through the ``pao_host_agents`` and ``pao_readiness_detectors`` hooks.
"""
