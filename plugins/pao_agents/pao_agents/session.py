"""What an agent reads as it starts: the briefing through its host's session channel (or a context file in its
folder, step 4), and the host's command line (step 6), checked before any process starts."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import attrs

from pao_agents import agentdir
from pao_core.errors import ValidationError
from pao_agents.spec.options import spawn_options
from pao_agents.spec.records import SpawnRequest
from pao_core.models import Briefing
from pao_core.topic import reject_control

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_agents.spec.contracts import HostAgent
    from pao_core.plugins import Plugins


def pipes_briefing(host_agent: HostAgent, config: PaoConfig) -> bool:
    """Whether this spawn starts the CLI before its briefing is composed (the host's session channel is read from a
    pipe, see :func:`pao_agents.launch.feed_briefing`)."""
    return bool(channels(host_agent).session and spawn_options(config).delivery == "session" and host_agent.pipes_briefing)


def deliver_briefing(
    request: SpawnRequest, briefing: Briefing | None, host_agent: HostAgent, config: PaoConfig, plugins: Plugins
) -> tuple[SpawnRequest, dict[str, Any]]:
    """Step 4: the briefing into the agent's private folder (the host's session channel) or into the folder.

    Returns the request completed with what the command line needs (the agent's
    folder, the first prompt) and what the record keeps about the delivery. ``briefing``
    ``None`` (:func:`pipes_briefing`): its file is a pipe, which :func:`hand_briefing` fills.
    """
    channel = channels(host_agent)
    if channel.session and spawn_options(config).delivery == "session":
        folder = agentdir.fresh_agent_dir(config.home, request.name)
        request = attrs.evolve(request, agent_dir=str(folder))
        prompt = host_agent.nudge(request, "") if request.nudge and channel.first_prompt else None
        request = attrs.evolve(request, prompt=prompt)
        if briefing is None:
            os.mkfifo(folder / agentdir.BRIEFING, 0o600)
        else:
            agentdir.write_private(folder, {agentdir.BRIEFING: briefing.markdown})  # first: session files may be made from it
        agentdir.write_private(folder, host_agent.session_files(request))
        if briefing is not None:
            plugins.briefing_written(briefing, request.folder, str(folder / agentdir.BRIEFING))
        return request, {
            "delivery": channel.session, "briefing_file": str(folder / agentdir.BRIEFING),
            "agent_dir": str(folder), "events": event_channel(host_agent, request, channel),
        }
    from pao_agents.delivery import deliver  # loaded on use, not at start-up

    block = host_agent.context_block(config.briefing.filename, briefing.markdown)
    created = not os.path.lexists(os.path.join(request.folder, host_agent.context_file))
    done = deliver(briefing, request.folder, config=config, context_file=host_agent.context_file, context_block=block, plugins=plugins)
    wrote = {"briefing_file": str(done.briefing_path), "context_file": str(done.context_path), "context_created": created}
    events = event_channel(host_agent, request, channel) if channel.events else None
    if events:  # hooks without a session channel (Gemini CLI): its events still go to the agent's private folder
        folder = agentdir.fresh_agent_dir(config.home, request.name)
        request = attrs.evolve(request, agent_dir=str(folder))
        agentdir.write_private(folder, host_agent.session_files(request))
        wrote.update(agent_dir=str(folder), events=events)
    return request, {"delivery": "file", **wrote}


def hand_briefing(request: SpawnRequest, briefing: Briefing, plugins: Plugins) -> None:
    """The briefing for the pipe :func:`deliver_briefing` made: written whole beside it, for the launcher's feeder."""
    from pao_agents.launch import READY_SUFFIX  # the launcher's own names

    assert request.agent_dir, "a piped briefing lives in the agent's folder"
    agentdir.write_private(Path(request.agent_dir), {agentdir.BRIEFING + READY_SUFFIX: briefing.markdown})
    plugins.briefing_written(briefing, request.folder, str(Path(request.agent_dir, agentdir.BRIEFING)))


def event_channel(host_agent: HostAgent, request: SpawnRequest, channel: Channels) -> str | None:
    """The host's event channel, unless its settings keep pao's hooks from running: then the screen tells."""
    silenced = host_agent.events_silenced(request.folder) if channel.events else None
    if silenced:
        from pao_core.sanitize import strip_controls  # only here: start-up stays light

        print(f"pao: {strip_controls(silenced)}: {request.name}'s state comes from its screen", file=sys.stderr)
        return None
    return channel.events


@attrs.frozen
class Channels:
    """What a host's CLI offers pao besides its screen (``pao_hosts.common.CliProfile`` documents each)."""

    session: str | None = None
    events: str | None = None
    chooses_session_id: bool = False
    first_prompt: bool = False


def channels(host_agent: HostAgent) -> Channels:
    """The host's channels; a host that declares none is driven through its screen and a context file."""
    return Channels(
        host_agent.session_channel,
        host_agent.event_channel,
        host_agent.chooses_session_id,
        host_agent.takes_first_prompt,
    )


def host_command(host_agent: HostAgent, request: SpawnRequest, env: Mapping[str, str]) -> list[str]:
    """The host's command for this request, made once per spawn; refused (before any process starts) if unsafe."""
    command = host_agent.command(request)
    if not command:
        raise ValidationError(f"host {host_agent.name}: empty command")
    for word in command:
        reject_control(word, f"host {host_agent.name}'s command")
    program = command[0]
    found = shutil.which(program, path=env.get("PATH")) if os.sep not in program else program
    if not found or not os.access(found, os.X_OK):
        raise ValidationError(f"host {host_agent.name}: command {program!r} is not installed or not executable")
    return command
