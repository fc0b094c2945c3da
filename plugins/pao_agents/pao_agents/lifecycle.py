"""Everything after spawn: send text (confirmed on screen), observe, kill, checkpoint, pause, resume.

The screen conversation is ``pao_agents.conversation`` and what starting a process needs is
``pao_agents.resolve``; both are shared with ``pao_agents.spawn`` (spawn).

Semantics (docs/lifecycle.md): ``pause`` checkpoints the agent and ends its process,
keeping its record as ``paused``; ``resume`` relaunches a paused *or dead* agent with
the host's resume command (the conversation continues from its session id) and waits
until it is ready. Nothing here sleeps for a fixed time where the screen can confirm.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import attrs

from pao_agents.spec.options import machine_name, spawn_options
from pao_agents import agentdir
from pao_agents.agentdir import RECEIPT_TIMEOUT
from pao_agents.conversation import SendFailed, send_text
from pao_agents.launch import settle_pipe
from pao_agents.light import observed_state
from pao_agents.states import screen_fills_in
from pao_agents.receipt import await_receipt
from pao_agents.readiness import wait_ready
from pao_agents.resolve import AgentContext, agent_environment, cleanup_written
from pao_agents.spec.contracts import McpWiring
from pao_core.errors import PaoError, ValidationError
from pao_core.files import atomic_write, private_dir
from pao_core.models import converter
from pao_agents.spec.records import AgentRecord, SpawnRequest
from pao_core.topic import shown as quoted

__all__ = ["AgentElsewhere", "AgentNotRunning", "Agents", "Observation", "SendFailed", "agent_environment", "cleanup_written", "send_text"]

if TYPE_CHECKING:
    from pao_agents.spec.contracts import HostAgent, TerminalDriver

class AgentNotRunning(PaoError):
    """The agent's process or terminal is gone."""


class AgentElsewhere(PaoError):
    """The agent runs on another machine: its terminal target means nothing here."""


@attrs.frozen
class Observation:
    """What an agent is doing now, from its process and its CLI's events (``source="hooks"``) or its screen."""

    record: AgentRecord
    state: str
    reason: str | None = None
    screen: str = ""
    source: str = "screen"
    receipt: float | None = None
    """When the CLI's own SessionStart event confirmed the session (hook hosts only)."""


@attrs.define
class Agents(AgentContext):
    """Lifecycle operations on registered agents."""

    # -- observing -----------------------------------------------------------------

    def observe(self, record: AgentRecord, *, with_screen: bool = True, show_screen: bool = False) -> Observation:
        """The agent's state now: paused, dead, else its CLI's newest event, else the screen's verdict.

        An agent whose CLI reports events (``record.extra["events"]``) takes its state from them; with
        ``with_screen`` its screen fills in what they do not report (a retried request, a failed turn, a dialog:
        :func:`pao_agents.states.screen_fills_in`). Without the screen this is what ``pao list`` shows
        (:func:`pao_agents.light.observed_state`, shared with its light path).
        """
        if not self.runs_here(record):
            return Observation(record, "unknown", f"runs on machine {record.machine}", source="machine")
        driver = None if record.state == "paused" else self._usable_driver(record.terminal)
        if isinstance(driver, str):  # the registry is readable all the same: say what cannot be checked, and why
            return Observation(record, "unknown", f"not verified: {driver}", source="terminal")
        alive = driver is not None and bool(record.target) and driver.is_alive(record.target)
        state, reason, source, receipt = observed_state(record.state, record.extra, record.session_id, alive)
        fill_in = with_screen and state in ("busy", "ready")  # what hooks do not report: retries, dialogs
        if not alive or not (show_screen or fill_in or with_screen and source == "screen"):
            return Observation(record, state, reason, source=source, receipt=receipt)
        screen = driver.read(record.target)
        verdict = self.reader(record.host).classify(screen) if with_screen else None
        if source == "screen" and verdict is not None:
            return Observation(record, verdict.state, verdict.reason, screen, receipt=receipt)
        if verdict is not None and screen_fills_in(state, verdict.state):
            return Observation(record, verdict.state, verdict.reason, screen, "screen", receipt)
        return Observation(record, state, reason, screen, source, receipt)

    def _usable_driver(self, terminal: str) -> TerminalDriver | str:
        """The agent's terminal driver, or why it cannot be asked here (its plugin is gone, tmux is not installed)."""
        try:
            driver = self.driver(terminal)
        except ValidationError as exc:
            return str(exc)
        return driver.availability() or driver

    def refresh(self, observation: Observation) -> AgentRecord:
        """Store an observed state that differs from the record's (never overriding ``paused``), unless the
        record changed since it was observed (a pause or resume meanwhile wins over what was seen before it)."""
        record, state = observation.record, observation.state
        if state in ("unknown", record.state) or record.state == "paused":
            return record
        return self.set_state(record.name, state, source=observation.source, expected=record.state)

    # -- acting ------------------------------------------------------------------------

    def runs_here(self, record: AgentRecord) -> bool:
        return not record.machine or record.machine == machine_name(self.config)

    def here(self, name: str) -> AgentRecord:
        """The record of an agent this machine runs; another machine's is refused (pao-machines routes it there)."""
        record = self.registry.get(name)
        if not self.runs_here(record):
            raise AgentElsewhere(f"agent {name!r} runs on machine {record.machine}; pao reaches it there with the "
                                 "pao-machines plugin (docs/machines.md), or 'pao kill --forget' forgets it here")
        return record

    def live(self, name: str) -> tuple[AgentRecord, TerminalDriver]:
        record = self.here(name)
        driver = self.driver(record.terminal)
        if record.state == "paused":
            raise AgentNotRunning(f"agent {name!r} is paused; 'pao resume {name}' starts it again")
        if not record.target or not driver.is_alive(record.target):
            raise AgentNotRunning(f"agent {name!r} is not running (its terminal is gone); 'pao resume {name}' restarts it")
        return record, driver

    def send(self, name: str, text: str, *, receipt_timeout: float = RECEIPT_TIMEOUT) -> float | None:
        """Paste and submit ``text`` (confirmed on screen), then wait for the receipt: the CLI's own event for that
        prompt (UserPromptSubmit; Gemini CLI's BeforeAgent), when its hooks report events. Without one within
        ``receipt_timeout`` the submit key is pressed once more and the wait repeated, then :class:`SendFailed`.
        Returns the receipt's time (``None``: no events to confirm with, or ``receipt_timeout`` 0)."""
        record, driver = self.live(name)
        host = self.host(record.host)
        since = time.time()
        send_text(driver, record.target, text, submit_key=host.submit_key, reader=self.reader(record.host), name=name)
        if not record.extra.get("events") or receipt_timeout <= 0:
            return None
        received = await_receipt(driver, record.target, host.submit_key, record.extra["agent_dir"], text, since,
                                 receipt_timeout)
        if received is not None:
            return received
        raise SendFailed(f"{name} shows the text taken, but its CLI reported no submitted prompt within "
                         f"{2 * receipt_timeout:.0f} s (the submit key was pressed again once); 'pao status {name}' "
                         "shows its screen")

    def kill(self, name: str, *, forget_only: bool = False, clean: bool = False, discard: bool = False) -> AgentRecord:
        """End the agent's process and forget it, with its checkpoint and what pao wrote for it; ``forget_only``: only forget it.

        ``clean`` also removes the agent's worktree (``spawn --worktree``), and refuses,
        before ending anything, when the worktree holds uncommitted changes; and it removes the
        trust entries pao's pre-seed added for the agent's folder, unless another agent of the same
        host still runs in that folder. ``discard`` (``pao finish --discard``) removes the worktree with
        its uncommitted changes.
        """
        record = self.registry.get(name) if forget_only else self.here(name)
        worktree = record.extra.get("worktree")
        if clean:
            from pao_agents.worktrees import uncommitted  # loaded on use, not at start-up

            changes = uncommitted(worktree) if worktree and not discard else None
            if changes:
                raise ValidationError(
                    f"the worktree of agent {quoted(name)}, {worktree['root']}, has {len(changes)} uncommitted change(s);"
                    " commit or discard them first (nothing was ended)"
                )
        if record.target and not forget_only:
            try:
                driver = self.driver(record.terminal)
            except ValidationError as exc:
                raise ValidationError(f"{exc}: cannot end {quoted(name)}; `pao kill {name} --forget` forgets it") from None
            driver.kill(record.target)
        checkpoint = record.extra.get("checkpoint")
        if self.runs_here(record):  # another machine's paths are that machine's files
            if checkpoint:
                Path(checkpoint).unlink(missing_ok=True)
            others = [other for other in self.registry.list() if other.name != name]
            cleanup_written(self.config, name, record.extra, others)
        if clean and self.runs_here(record):
            self._untrust(record)
        if clean and worktree:
            from pao_agents.worktrees import remove_worktree  # loaded on use, not at start-up

            remove_worktree(worktree, discard=discard)
        return self.registry.remove(name)

    def _untrust(self, record: AgentRecord) -> None:
        """Remove the trust entries pao's pre-seed added for ``record`` (kept while another agent of its host runs there)."""
        added = (record.extra.get("trust") or {}).get("added")
        sharing = [other for other in self.registry.list()
                   if other.name != record.name and (other.host, other.folder) == (record.host, record.folder)]
        if added and not sharing:
            self.host(record.host).unseed(record.folder, added)

    def checkpoint(self, name: str) -> Path:
        """Save screen, session id, briefing hash and briefing text under ``$PAO_HOME/checkpoints``."""
        record = self.here(name)
        host = self.host(record.host)
        driver = self.driver(record.terminal)
        alive = bool(record.target) and driver.is_alive(record.target)
        session = host.session_id(record) or record.session_id
        briefing_path = self._briefing_path(record)
        document: dict[str, Any] = {
            "name": name,
            "saved_at": dt.datetime.now(dt.timezone.utc).isoformat(),
            "session_id": session,
            "briefing_hash": record.briefing_hash,
            "briefing": briefing_path.read_text(encoding="utf-8") if briefing_path.is_file() else None,
            "screen": driver.read(record.target) if alive else None,
            "record": converter.unstructure(record),
        }
        path = private_dir(Path(self.config.home) / "checkpoints") / f"{name}.json"
        atomic_write(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n", mode=0o600)
        extra = {**record.extra, "checkpoint": str(path), "checkpoint_at": document["saved_at"]}
        self.registry.update(name, session_id=session, extra=extra)
        return path

    def pause(self, name: str) -> AgentRecord:
        """Checkpoint, then end the process; the record stays, as ``paused``: recorded before the process ends, so
        its CLI's exit event (SessionEnd) finds a state only ``resume`` changes and notifies no exit."""
        record, driver = self.live(name)
        self.checkpoint(name)
        self.set_state(name, "paused", source="pause")
        try:
            driver.kill(record.target)
        except BaseException:
            self.set_state(name, record.state, source="pause", expected="paused")  # still running: as it was
            raise
        return self.set_state(name, "paused", source="pause", target="", pid=None)

    def resume(self, name: str, *, timeout: float | None = None, environ: dict[str, str] | None = None) -> AgentRecord:
        """Relaunch a paused or dead agent with the host's resume command; wait until ready."""
        record = self.here(name)
        driver = self.driver(record.terminal)
        if record.state != "paused" and record.target and driver.is_alive(record.target):
            raise PaoError(f"agent {name!r} is running; nothing to resume")
        if not os.path.isdir(record.folder):
            raise ValidationError(f"agent {name!r}: its folder {record.folder} no longer exists")
        host = self.host(record.host)
        reason = driver.availability()
        if reason:
            raise ValidationError(f"terminal {driver.name} is not available: {reason}")
        record = self._restore(record, host)
        if record.target:
            driver.kill(record.target)  # the dead window that is left over
        request = SpawnRequest(record.topic, record.folder, name, record.host, record.terminal, nudge=False,
                               session_id=record.session_id, agent_dir=record.extra.get("agent_dir"))
        base = os.environ if environ is None else environ
        # the session's MCP servers again, as the spawn wired them (none when it ran with --no-mcp)
        wiring = agentdir.session_mcp(request, host, self.config, self.plugins, base) if record.extra.get("mcp") else McpWiring()
        env = agent_environment(base, {**host.environment(request), **wiring.env})
        command = host.resume_command(record, wiring.args) if wiring.args else host.resume_command(record)
        target = driver.spawn(name, record.folder, command, env)
        self.set_state(name, "starting", source="resume", target=target, pid=driver.pid(target))
        try:
            wait_ready(driver, target, self.reader(record.host), timeout or spawn_options(self.config).ready_timeout, name=name)
        except PaoError:
            self.set_state(name, "dead", source="resume")
            raise
        return self.set_state(name, "ready", source="resume")

    def _restore(self, record: AgentRecord, host: HostAgent) -> AgentRecord:
        """Bring back what the last checkpoint saved: the session id and a missing briefing file."""
        saved = _load_checkpoint(record.extra.get("checkpoint"))
        session = record.session_id or (saved or {}).get("session_id") or host.session_id(record)
        briefing_path = self._briefing_path(record)
        private = record.extra.get("delivery", "file") != "file"
        # a pipe whose feeder never finished (killed): the CLI would wait at it for ever
        settled = settle_pipe(str(briefing_path)) if private else None
        if saved and saved.get("briefing") and (settled is False or not briefing_path.exists()):
            if private:
                agentdir.agent_dir(self.config.home, record.name)
            atomic_write(briefing_path, saved["briefing"], mode=0o600 if private else None)
        if session != record.session_id:
            record = self.registry.update(record.name, session_id=session)
        return record

    def _briefing_path(self, record: AgentRecord) -> Path:
        return Path(record.extra.get("briefing_file") or Path(record.folder, self.config.briefing.filename))

    def for_each(self, names: list[str] | None, action: Callable[[str], None]) -> dict[str, str | None]:
        """Run ``action`` on the named agents (all live ones when ``names`` is None) at once.

        Returns each agent's error message, or ``None`` when it worked.
        """
        from concurrent.futures import ThreadPoolExecutor  # only this path needs it: start-up stays light

        if names is None:
            names = [r.name for r in self.registry.list() if r.state != "paused"]
        else:
            for name in names:
                self.registry.get(name)

        def run(name: str) -> str | None:
            try:
                action(name)
            except PaoError as exc:
                return str(exc)
            return None

        with ThreadPoolExecutor(max_workers=max(1, min(8, len(names)))) as pool:
            return dict(zip(names, pool.map(run, names)))


def _load_checkpoint(path: str | None) -> dict[str, Any] | None:
    if not path:
        return None
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
