"""Host-agent profiles: everything specific to one coding-agent CLI.

``claude_code``, ``codex`` and ``gemini`` are default plugins: each contributes its
profile (command line, context file and block, trust pre-seeding, transcripts) and
its screen detector through the ``pao_host_agents`` and ``pao_readiness_detectors``
hooks. Nothing host-specific lives outside this package.
"""
