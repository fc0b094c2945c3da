"""Host-agent profiles: each coding-agent CLI pao can start, and the screens it shows.

A profile module registers itself as a default plugin (``pao_host_agents`` and
``pao_readiness_detectors``); everything host-specific lives in it.
"""
