"""The spawn pipeline, step by step. ``brief`` is steps 2-3 (gather, compose); ``spawn`` runs all seven."""

from __future__ import annotations

import contextlib
import functools
import os
import time
import uuid
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

import attrs

from pao_agents.spec.options import machine_name, spawn_options
from pao_agents.spec.calls import agent_spawned
from pao_agents import agentdir, ahead, forked, launch, mcpwait, names, piped_briefing
from pao_agents.conversation import send_text
from pao_agents.receipt import nudge_receipt, submit_at_once
from pao_agents.trust import TrustDecision, decide, preseed_step, wait_or_ask
from pao_agents.abandon import StepClock, Reporter, abandon
from pao_agents.registry import open_registry
from pao_agents.resolve import AgentContext, agent_environment
from pao_agents.session import channels, deliver_briefing, hand_briefing, host_command, pipes_briefing
from pao_core.errors import PaoError, ValidationError, describe
from pao_agents.spec.contracts import McpWiring
from pao_core.models import Briefing
from pao_agents.spec.records import AgentRecord, SpawnRequest
from pao_core.topic import check_topic, reject_control
from pao_core.waiting import Outcome, poll_until
from pao_core.waiting import start as start_call

if TYPE_CHECKING:
    from pao_agents.forked import Forked
    from pao_agents.readiness import ScreenReader
    from pao_core.config import PaoConfig
    from pao_agents.spec.contracts import HostAgent, RegistryStore, TerminalDriver
    from pao_core.plugins import Plugins


EARLY_GATHER_GRACE = 5.0
"""Seconds past the gathering deadline after which a child's briefing is given up (it is composed here instead)."""
SESSION_WAIT = 3.0
"""Seconds to wait after the nudge for the host's session id (later commands look again)."""



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
    clock = StepClock([], report)
    early = _gather_early(topic, folder, config, plugins) if parallel and briefing is None and not worktree else None
    env = dict(os.environ if environ is None else environ)
    try:
        agents = AgentContext(config, plugins, open_registry(config, plugins))
        plan = validate(topic, folder=folder, name=name, terminal=terminal, host=host, nudge=nudge, agents=agents, env=env,
                        let_cli_ask=let_cli_ask)
        record = _reserve(agents.registry, plan, machine_name(config))
    except BaseException:
        if early is not None:
            early.briefing.cancel()
        raise
    underway = _Underway(agents, plan, clock, attrs.evolve(plan.request, name=record.name), dict(record.extra))
    clock.done("1 validate", f"{record.name} in {plan.request.folder} ({plan.request.host} on {plan.request.terminal})")
    try:
        underway.open_window(worktree)
        briefing, briefing_file = underway.launch(early, briefing, env, mcp)
        state = underway.start(briefing_file)
        record = underway.register(record, state, briefing)
    except BaseException as exc:
        underway.abandon(exc, early)
        raise
    agent_spawned(plugins, record)
    return Spawned(record, tuple(clock.steps), briefing)


@attrs.define
class _Underway:
    """A spawn past step 1: what it made so far (the window, its gate, what it wrote), which a failure undoes."""

    agents: AgentContext
    plan: Plan
    clock: StepClock
    request: SpawnRequest
    extra: dict[str, Any]
    target: str = ""
    gate: str = ""
    opening: Outcome[str] | None = None
    held: bool = False
    """The task waits for the CLI to have pao's tools (see pao_agents.mcpwait) instead of going on its command line."""

    def open_window(self, worktree: bool) -> None:
        """The agent's folder (a new worktree of it when asked) and its window, which opens now and waits: its agent
        starts only once everything it reads at start-up is written."""
        if worktree:
            self.request, self.extra["worktree"] = _in_worktree(self.request, self.agents.config)
            self.clock.done("1 worktree", self.request.folder)
        self.gate = launch.open_gate()
        request, argv = self.request, launch.gate_argv(self.gate)
        # on a thread: the terminal's own work (a tmux client and server) overlaps the session files and the pre-seed
        self.opening = start_call(lambda: self.plan.driver.spawn(request.name, request.folder, argv, {}), name="pao-window")

    def window(self) -> str:
        """The window :meth:`open_window` opened (its error, if it failed)."""
        if not self.target and self.opening is not None:
            opening, self.opening = self.opening, None
            self.target = opening.result()
            self.clock.done("1 window", f"{self.target}, waiting for its agent")
        return self.target

    def launch(self, early: _Early | None, given: Briefing | None, env: Mapping[str, str], mcp: bool) -> tuple[Briefing, str]:
        """Steps 2-6: the briefing and session files, then the agent; or, for a CLI that reads its briefing from a
        pipe (:mod:`pao_agents.piped_briefing`), the session files and the agent first, then its briefing."""
        if given is None and pipes_briefing(self.plan.host, self.agents.config):
            _, wiring, delivered = self.write_session(None, env, mcp)
            self.release(env, wiring, piped=True)
            briefing = self.hand_over(self.briefing(early, None), wiring)
        else:
            self.window()
            briefing, wiring, delivered = self.write_session(self.briefing(early, given), env, mcp)
            self.release(env, wiring)
        return briefing, str(delivered["briefing_file"])

    def briefing(self, early: _Early | None, given: Briefing | None) -> Briefing:
        """Steps 2-3: the briefing given, else the one gathered early for this topic and folder, else gathered here."""
        config, request, briefing = self.agents.config, self.request, given
        if early is not None:  # the same topic and folder unless a worktree moved it (then gathered here)
            if (early.topic, early.folder) == (request.topic, request.folder):
                briefing = early.briefing.result(config.gather.deadline + EARLY_GATHER_GRACE)
            early.briefing.cancel()
        briefing = briefing or _brief_here(request.topic, request.folder, config, self.agents.plugins)
        self.clock.done("2-3 gather+compose", f"{len(briefing.items)} items from {len(briefing.backends)} backends")
        return briefing

    def write_session(self, briefing: Briefing | None, env: Mapping[str, str], mcp: bool
                      ) -> tuple[Briefing | None, McpWiring, dict]:
        """Steps 4-5: the briefing (for the session's MCP servers) and session files, the MCP wiring, the trust pre-seed.
        ``briefing`` ``None``: its file is a pipe the CLI will wait at, filled by :meth:`hand_over`."""
        host_agent, trust = self.plan.host, self.plan.trust
        briefing, wiring, delivered = self._session_files(briefing, env, mcp)
        self.extra.update(preseed_step(host_agent, self.request.folder, trust))
        self.clock.done("5 pre-seed", f"{host_agent.name}: {trust.why}" if trust.preseed else "none: the CLI asks")
        return briefing, wiring, delivered

    def _session_files(self, briefing: Briefing | None, env: Mapping[str, str], mcp: bool
                       ) -> tuple[Briefing | None, McpWiring, dict]:
        config, plugins, host_agent = self.agents.config, self.agents.plugins, self.plan.host
        wiring = agentdir.session_wiring(self.request, host_agent, config, plugins, env) if mcp else McpWiring()
        if wiring.servers and briefing is not None:  # a section may name the tools the session has
            briefing = _for_session(briefing, wiring, config, plugins)
        request, delivered = deliver_briefing(self.request, briefing, host_agent, config, plugins)
        self.extra.update(delivered)
        if wiring.files:
            agentdir.write_private(agentdir.agent_dir(config.home, request.name), wiring.files)
        self.held = mcpwait.holds_first_prompt(host_agent, wiring.servers, request.agent_dir) and request.prompt is not None
        self.request = attrs.evolve(request, mcp_args=wiring.args, prompt=None if self.held else request.prompt)
        self.extra["mcp"] = [server.name for server in wiring.servers]
        piped = briefing is None
        self.clock.done("4 session files" if piped else "4 deliver",
                        f"{delivered['delivery']}: {delivered['briefing_file']}{' (a pipe: its briefing follows)' if piped else ''}")
        return briefing, wiring, delivered

    def release(self, env: Mapping[str, str], wiring: McpWiring, piped: bool = False) -> None:
        """Step 6: the agent starts in its window (with the feeder of its briefing's pipe when ``piped``)."""
        host_agent, request = self.plan.host, self.request
        command = host_command(host_agent, request, env)
        self.window()
        bound = piped_briefing.bound(self.agents.config, EARLY_GATHER_GRACE)
        feed = piped_briefing.feeder(request, bound) if piped else None
        launch.release_gate(self.gate, command, agent_environment(env, {**host_agent.environment(request), **wiring.env}), feed)
        self.clock.done("6 spawn", self.target)

    def hand_over(self, briefing: Briefing, wiring: McpWiring) -> Briefing:
        """Step 4 for a CLI started first: the briefing composed for its session, put where its pipe's feeder takes it."""
        config, plugins = self.agents.config, self.agents.plugins
        if wiring.servers:
            briefing = _for_session(briefing, wiring, config, plugins)
        hand_briefing(self.request, briefing, plugins)
        self.extra["briefing_piped"] = True
        self.clock.done("4 deliver", f"through its pipe: {self.extra['briefing_file']}")
        return briefing

    def start(self, briefing_file: str) -> str:
        """Step 7: once the agent is ready, the nudge. Returns the agent's state."""
        host_agent, driver, request = self.plan.host, self.plan.driver, self.request
        reader = self.agents.reader(request.host)
        ready = wait_or_ask(driver, self.target, reader, spawn_options(self.agents.config).ready_timeout, request, self.plan.trust)
        self.clock.done("7 ready", f"{ready.polls} polls ({ready.verdict.state})")
        if ready.verdict.state == "blocked":
            self.extra["waiting_for"] = ready.verdict.reason
            return "waiting"
        if request.nudge and not request.prompt:
            self.clock.done("7 nudge", self.nudge(reader, host_agent.nudge(request, briefing_file)))
            return "busy"
        return "busy" if request.prompt else "ready"

    def nudge(self, reader: ScreenReader, text: str) -> str:
        """The task, typed: a held one (see pao_agents.mcpwait) once the CLI has pao's tools, pasted and submitted at
        once and confirmed by the CLI's own receipt; any other through the screen, then that receipt."""
        host_agent, driver, request = self.plan.host, self.plan.driver, self.request
        key = host_agent.submit_key
        if self.held:  # bounded: past it the task goes anyway and pao says so
            self.extra["mcp_listed"] = mcpwait.await_tools_listed(str(request.agent_dir), request.name)
            if self.extra.get("events"):
                return submit_at_once(driver, self.target, key, self.extra, request.name, text)
        since = time.time()
        send_text(driver, self.target, text, submit_key=key, reader=reader, name=request.name)
        return nudge_receipt(driver, self.target, key, self.extra, request.name, text, since)

    def register(self, record: AgentRecord, state: str, briefing: Briefing) -> AgentRecord:
        """The registration completes: until here the record only held the name."""
        host_agent, request = self.plan.host, self.request
        if self.extra.pop("briefing_piped", False):
            bound, patience = piped_briefing.bound(self.agents.config, EARLY_GATHER_GRACE), piped_briefing.HANDED_WAIT
            self.extra["briefing_handed"] = piped_briefing.handed(request, bound, 0.0 if state == "waiting" else patience)
        session = request.session_id or (_await_session(host_agent, record) if state == "busy" else host_agent.session_id(record))
        # "waiting" (the CLI's own trust dialog) notifies the user, through pao_agent_state_changed
        return self.agents.set_state(
            request.name, state, source="spawn", folder=request.folder, target=self.target,
            pid=self.plan.driver.pid(self.target), session_id=session, briefing_hash=briefing.content_hash, extra=self.extra,
        )

    def abandon(self, exc: BaseException, early: _Early | None) -> None:
        """Undo what this spawn made; a registry that could not be told is one clear error naming the name it holds."""
        if early is not None:
            early.briefing.cancel()
        if self.opening is not None:
            with contextlib.suppress(BaseException):
                self.window()  # its window is closed below too
        if self.gate:
            launch.close_gate(self.gate)
        name = self.request.name
        if not abandon(self.agents, name, self.plan.driver, self.target, self.extra, self.plan.host) and isinstance(exc, Exception):
            raise PaoError(f"{describe(exc)}; {name} was not started, but the registry still holds its name "
                           f"(free it once the registry answers: pao kill --forget {name})") from None


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
        base = names.name_from_topic(topic) or names.name_from_folder(real_folder)
        chosen = names.unique_name(base, agents.registry.names())
    host_agent = agents.host(host or spawn_options(config).host)
    driver = agents.driver(terminal or spawn_options(config).terminal)
    reason = driver.availability()
    if reason:
        raise ValidationError(f"terminal {driver.name} is not available: {reason}")
    session = str(uuid.uuid4()) if channels(host_agent).chooses_session_id else None
    request = SpawnRequest(
        topic, real_folder, chosen, host_agent.name, driver.name, spawn_options(config).nudge if nudge is None else nudge, session
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


def _for_session(briefing: Briefing, wiring: McpWiring, config: PaoConfig, plugins: Plugins) -> Briefing:
    """The briefing composed again from the same answers, for a session with ``wiring``'s MCP servers."""
    from pao_core.briefing import compose  # the briefing's sections: loaded where they render

    return compose(briefing.topic, folders=briefing.folders, results=briefing.backends, config=config, plugins=plugins,
                   started=time.monotonic() - briefing.elapsed_ms / 1000, servers=tuple(s.name for s in wiring.servers))


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
