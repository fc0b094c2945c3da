"""pao-agents: the agent lifecycle, from ``pao spawn`` to ``pao kill``.

``spawn`` runs the steps of a spawn top to bottom (resolve host and terminal, brief,
deliver, start, wait for ready, nudge, record); ``lifecycle`` is everything after it
(observe, send, kill, checkpoint, pause, resume); ``readiness`` and ``conversation``
read and talk to an agent's screen; ``registry`` is the default agent registry
(``agents.json``); ``launch`` starts a process with exactly its environment for the
terminal drivers; ``commands`` adds the agent commands to ``pao``; ``checks`` adds the
registry and its agents to ``pao doctor``. Hosts, terminals and registries come from
other plugins through pao_core's contracts.
"""
