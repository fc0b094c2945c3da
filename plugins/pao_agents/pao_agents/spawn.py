"""The spawn pipeline, step by step. ``brief`` is steps 2-3 (gather, compose); ``spawn`` runs all seven."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple

import attrs

from pao_agents import agentdir, ahead, forked, launch, mcpwait, names
from pao_agents.conversation import send_text
from pao_agents.trust import TrustDecision, decide, preseed_step, wait_or_ask
from pao_agents.registry import open_registry
from pao_agents.resolve import AgentContext, agent_environment, cleanup_written
from pao_core.errors import PaoError, UnknownAgent, ValidationError, describe
from pao_core.files import atomic_write, private_dir
from pao_core.contracts import McpWiring
from pao_core.models import AgentRecord, Briefing, SpawnRequest
from pao_core.topic import check_topic, reject_control
from pao_core.waiting import poll_until

if TYPE_CHECKING:
    from pao_agents.forked import Forked
    from pao_core.config import PaoConfig
    from pao_core.contracts import HostAgent, RegistryStore, TerminalDriver
    from pao_core.plugins import Plugins


EARLY_GATHER_GRACE = 5.0
"""Seconds past the gathering deadline after which a child's briefing is given up (it is composed here instead)."""
SESSION_WAIT = 3.0
"""Seconds to wait after the nudge for the host's session id (later commands look again)."""

Reporter = Callable[[str, float, str], None]
"""Called as each spawn step ends: (step label, elapsed seconds, detail)."""


@attrs.frozen
class Spawned:
    """The result of ``spawn``: the registry record and each step's time in seconds."""

    record: AgentRecord
    steps: tuple[tuple[str, float], ...]
    briefing: Briefing


def spawn(
    topic: str,
    *,
    folder: str | None = None,
    name: str | None = None,
    terminal: str | None = None,
    host: str | None = None,
    nudge: bool | None = None,
    worktree: bool = False,
    mcp: bool = True,
    config: PaoConfig,
    plugins: Plugins,
    report: Reporter | None = None,
    environ: Mapping[str, str] | None = None,
    briefing: Briefing | None = None,
    parallel: bool = False,
    let_cli_ask: bool | None = None,
) -> Spawned:
    """Run the seven steps: validate, gather, compose, deliver, pre-seed, spawn, ready (+ nudge).

    Everything is validated before a file is written or an agent started. A failure
    after the name was reserved removes the reservation, the agent's private folder
    and worktree, and closes the agent's window (its last screen is saved under
    ``$PAO_HOME/failed/``). The registry is written twice: the reservation, and the
    started agent. A ``briefing`` given (composed on another machine, ``spawn --on``)
    replaces steps 2-3. The agent's window opens before step 2 and waits: its agent starts
    in step 6, once the briefing, session files and pre-seed are written
    (:func:`pao_agents.launch.open_gate`). ``parallel`` (the ``pao`` command's own
    process): steps 2-3 run in a forked child from the moment the topic and folder are
    known, while the host and terminal are checked, the name reserved and the window
    opened (:mod:`pao_agents.forked`): in the helper the command forked before it read its
    configuration, when it did (:mod:`pao_agents.ahead`), else in a child forked then. Step 1 also decides
    the folder's trust (:mod:`pao_agents.trust`); ``let_cli_ask`` overrides ``[trust] let_cli_ask``.
    """
    steps: list[tuple[str, float]] = []
    clock = _StepClock(steps, report)
    early = _gather_early(topic, folder, config, plugins) if parallel and briefing is None and not worktree else None
    env = dict(os.environ if environ is None else environ)
    try:
        agents = AgentContext(config, plugins, open_registry(config, plugins))
        plan = validate(topic, folder=folder, name=name, terminal=terminal, host=host, nudge=nudge, agents=agents, env=env,
                        let_cli_ask=let_cli_ask)
        record = _reserve(agents.registry, plan, config.machine_name())
    except BaseException:
        if early is not None:
            early.briefing.cancel()
        raise
    host_agent, driver = plan.host, plan.driver
    request = attrs.evolve(plan.request, name=record.name)
    clock.done("1 validate", f"{record.name} in {request.folder} ({request.host} on {request.terminal})")
    target, gate, extra = "", "", dict(record.extra)
    try:
        if worktree:
            request, extra["worktree"] = _in_worktree(request, config)
            clock.done("1 worktree", request.folder)
        # the window opens now and waits: its agent starts only once everything it reads at start-up is written
        gate = launch.open_gate()
        target = driver.spawn(request.name, request.folder, launch.gate_argv(gate), {})
        clock.done("1 window", f"{target}, waiting for its agent")
        if early is not None:  # the same topic and folder unless a worktree moved it (then gathered here)
            if (early.topic, early.folder) == (request.topic, request.folder):
                briefing = early.briefing.result(config.gather.deadline + EARLY_GATHER_GRACE)
            early.briefing.cancel()
        briefing = briefing or _brief_here(request.topic, request.folder, config, plugins)
        clock.done("2-3 gather+compose", f"{len(briefing.items)} items from {len(briefing.backends)} backends")
        request, delivered = _deliver(request, briefing, host_agent, config, plugins)
        extra.update(delivered)
        wiring = agentdir.session_mcp(request, host_agent, config, plugins, env) if mcp else McpWiring()
        held = mcpwait.holds_first_prompt(host_agent, wiring.servers, request.agent_dir) and request.prompt is not None
        request = attrs.evolve(request, mcp_args=wiring.args, prompt=None if held else request.prompt)
        extra["mcp"] = [server.name for server in wiring.servers]
        clock.done("4 deliver", f"{delivered['delivery']}: {delivered['briefing_file']}")
        extra.update(preseed_step(host_agent, request.folder, plan.trust))
        clock.done("5 pre-seed", f"{host_agent.name}: {plan.trust.why}" if plan.trust.preseed else "none: the CLI asks")
        command = _command(host_agent, request, env)
        env = agent_environment(env, {**host_agent.environment(request), **wiring.env})
        launch.release_gate(gate, command, env)
        clock.done("6 spawn", target)
        reader = agents.reader(request.host)
        ready = wait_or_ask(driver, target, reader, config.spawn.ready_timeout, request, plan.trust)
        clock.done("7 ready", f"{ready.polls} polls ({ready.verdict.state})")
        state = "waiting" if ready.verdict.state == "blocked" else "busy" if request.prompt else "ready"
        if ready.verdict.state == "blocked":
            extra["waiting_for"] = ready.verdict.reason
        elif request.nudge and not request.prompt:
            if held:  # the task waits (bounded) for the CLI to have pao's tools: see pao_agents.mcpwait
                extra["mcp_listed"] = mcpwait.await_tools_listed(str(request.agent_dir), request.name)
            text = host_agent.nudge(request, str(delivered["briefing_file"]))
            send_text(driver, target, text, submit_key=host_agent.submit_key, reader=reader, name=request.name)
            state = "busy"
            clock.done("7 nudge", "submitted")
        session = request.session_id or (_await_session(host_agent, record) if state == "busy" else host_agent.session_id(record))
        # "waiting" (the CLI's own trust dialog) notifies the user, through pao_agent_state_changed
        record = agents.set_state(  # the registration completed: until here the record only held the name
            request.name,
            state,
            source="spawn",
            folder=request.folder,
            target=target,
            pid=driver.pid(target),
            session_id=session,
            briefing_hash=briefing.content_hash,
            extra=extra,
        )
    except BaseException as exc:
        if early is not None:
            early.briefing.cancel()
        if gate:
            launch.close_gate(gate)
        if not _abandon(agents, request.name, driver, target, extra, host_agent) and isinstance(exc, Exception):
            raise PaoError(f"{describe(exc)}; {request.name} was not started, but the registry still holds its name "
                           f"(free it once the registry answers: pao kill --forget {request.name})") from None
        raise
    plugins.agent_spawned(record)
    return Spawned(record, tuple(steps), briefing)


def _deliver(
    request: SpawnRequest, briefing: Briefing, host_agent: HostAgent, config: PaoConfig, plugins: Plugins
) -> tuple[SpawnRequest, dict[str, Any]]:
    """Step 4: the briefing into the agent's private folder (the host's session channel) or into the folder.

    Returns the request completed with what the command line needs (the agent's
    folder, the first prompt) and what the record keeps about the delivery.
    """
    channel = channels(host_agent)
    if channel.session and config.spawn.delivery == "session":
        folder = agentdir.fresh_agent_dir(config.home, request.name)
        request = attrs.evolve(request, agent_dir=str(folder))
        prompt = host_agent.nudge(request, "") if request.nudge and channel.first_prompt else None
        request = attrs.evolve(request, prompt=prompt)
        agentdir.write_private(folder, {agentdir.BRIEFING: briefing.markdown})  # first: session files may be made from it
        agentdir.write_private(folder, host_agent.session_files(request))
        plugins.briefing_written(briefing, request.folder, str(folder / agentdir.BRIEFING))
        return request, {
            "delivery": channel.session, "briefing_file": str(folder / agentdir.BRIEFING),
            "agent_dir": str(folder), "events": _event_channel(host_agent, request, channel),
        }
    from pao_agents.delivery import deliver  # loaded on use, not at start-up

    block = host_agent.context_block(config.briefing.filename, briefing.markdown)
    created = not os.path.lexists(os.path.join(request.folder, host_agent.context_file))
    done = deliver(briefing, request.folder, config=config, context_file=host_agent.context_file, context_block=block, plugins=plugins)
    wrote = {"briefing_file": str(done.briefing_path), "context_file": str(done.context_path), "context_created": created}
    return request, {"delivery": "file", **wrote}


def _event_channel(host_agent: HostAgent, request: SpawnRequest, channel: Channels) -> str | None:
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


def _command(host_agent: HostAgent, request: SpawnRequest, env: Mapping[str, str]) -> list[str]:
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


def _in_worktree(request: SpawnRequest, config: PaoConfig) -> tuple[SpawnRequest, dict[str, str]]:
    from pao_agents.worktrees import add_worktree  # loaded on use, not at start-up

    made = add_worktree(request.folder, config.home, request.name)
    return attrs.evolve(request, folder=made["path"]), made


@attrs.frozen
class Plan:
    """Step 1's output: the validated request and the objects that will carry it out."""

    request: SpawnRequest
    host: HostAgent
    driver: TerminalDriver
    base_name: str | None
    """The folder's name when the agent's name was derived from it (``api`` for ``api-2``)."""
    trust: TrustDecision = TrustDecision(True, "")


def validate(
    topic: str,
    *,
    folder: str | None,
    name: str | None,
    terminal: str | None,
    host: str | None,
    nudge: bool | None,
    agents: AgentContext,
    env: Mapping[str, str],
    let_cli_ask: bool | None = None,
) -> Plan:
    """Step 1: topic, folder, name, host, terminal, command; raises ValidationError, writes nothing."""
    config = agents.config
    topic, real_folder = topic_and_folder(topic, folder)
    base = None
    if name is not None:
        reject_control(name, "the agent name")
        chosen = names.check_name(name)
        if chosen in agents.registry.names():
            raise ValidationError(f"an agent named {chosen!r} already exists (pick another --name)")
    else:
        base = names.name_from_folder(real_folder)
        chosen = names.unique_name(base, agents.registry.names())
    host_agent = agents.host(host or config.spawn.host)
    driver = agents.driver(terminal or config.spawn.terminal)
    reason = driver.availability()
    if reason:
        raise ValidationError(f"terminal {driver.name} is not available: {reason}")
    session = str(uuid.uuid4()) if channels(host_agent).chooses_session_id else None
    request = SpawnRequest(
        topic, real_folder, chosen, host_agent.name, driver.name, config.spawn.nudge if nudge is None else nudge, session
    )
    missing = host_agent.consent_gaps(env)
    if missing:
        raise ValidationError(f"host {host_agent.name} needs you first: {'; '.join(missing)}")
    trust = decide(host_agent, real_folder, config, let_cli_ask=let_cli_ask)
    return Plan(request, host_agent, driver, base_name=base, trust=trust)


def topic_and_folder(topic: str, folder: str | None) -> tuple[str, str]:
    """The topic (a folder named in it taken out when ``folder`` is not given) and the folder's real path."""
    check_topic(topic)
    cwd = os.getcwd()  # not $PWD: a parent that changed folder may not have updated it
    if folder is None:
        split = names.split_topic(topic, cwd=cwd)
        topic, folder = split.topic, split.folder or cwd
    topic = " ".join(topic.split())
    if not topic:
        raise ValidationError("the topic is empty: say what the agent should work on")
    return topic, names.resolve_folder(folder, cwd=cwd)


class _Early(NamedTuple):
    topic: str
    folder: str
    briefing: Forked[Briefing]


def _gather_early(topic: str, folder: str | None, config: PaoConfig, plugins: Plugins) -> _Early:
    """Steps 2-3 started in a child process as soon as the topic and folder are valid (the rest of step 1 checks
    the host, the terminal and the registry, which the briefing does not depend on)."""
    topic, real_folder = topic_and_folder(topic, folder)
    helper = ahead.helper("briefing")
    sent = helper.run(functools.partial(ahead.gather, topic, real_folder, config)) if helper else None
    return _Early(topic, real_folder, sent or forked.start(lambda: _brief_here(topic, real_folder, config, plugins)))


def _brief_here(topic: str, folder: str, config: PaoConfig, plugins: Plugins) -> Briefing:
    from pao_core.gather import brief  # the stores' search: in the briefing's helper or child, unless neither answers

    return brief(topic, folders=[folder], config=config, plugins=plugins)


def _reserve(registry: RegistryStore, plan: Plan, machine: str) -> AgentRecord:
    request = plan.request
    record = AgentRecord(request.name, request.folder, request.topic, request.host, request.terminal, target="",
                         machine=machine, session_id=request.session_id)
    base = plan.base_name
    if base is not None:  # another pao may have taken the name since step 1 looked
        return registry.add(record, lambda n: names.numbered(base, n))
    return registry.add(record)


def _await_session(host_agent: HostAgent, record: AgentRecord, timeout: float = SESSION_WAIT) -> str | None:
    """The host's session id, which appears once the agent took its first message (the nudge)."""
    return poll_until(lambda: host_agent.session_id(record), timeout, first=0.02, cap=0.25)


def _abandon(agents: AgentContext, name: str, driver: TerminalDriver, target: str, extra: Mapping[str, Any],
             host_agent: HostAgent) -> bool:
    """Undo a failed spawn: keep the last screen for the user, close the window, remove what pao wrote (trust
    entries included), free the name; false when the registry could not be told."""
    if target:
        try:
            screen = driver.read(target)
            failed = private_dir(Path(agents.config.home) / "failed")
            atomic_write(failed / f"{name}.screen.txt", screen)
        except PaoError:
            pass
        try:
            driver.kill(target)
        except PaoError:
            pass
    with contextlib.suppress(PaoError, OSError):
        cleanup_written(agents.config, name, extra)
    added = (extra.get("trust") or {}).get("added")
    with contextlib.suppress(PaoError, OSError):
        if added:
            host_agent.unseed(str(added.get("folder", "")), added)
    try:
        agents.registry.remove(name)
    except UnknownAgent:
        pass
    except PaoError:  # the registry went away mid-spawn
        return False
    return True


@attrs.define
class _StepClock:
    steps: list[tuple[str, float]]
    report: Reporter | None
    last: float = attrs.field(factory=time.monotonic)

    def done(self, label: str, detail: str) -> None:
        now = time.monotonic()
        self.steps.append((label, now - self.last))
        if self.report is not None:
            self.report(label, now - self.last, detail)
        self.last = now
