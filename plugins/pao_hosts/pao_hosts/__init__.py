"""pao-hosts: the host-agent profiles pao ships, everything specific to one coding-agent CLI.

``claude_code``, ``codex`` and ``gemini`` are plugins of their own (entry points
``claude-code``, ``codex``, ``gemini``): each contributes its profile (command line,
context file and block, trust pre-seeding, transcripts) and its screen detector through
the ``pao_host_agents`` and ``pao_readiness_detectors`` hooks. pao_core names none of them.
"""
