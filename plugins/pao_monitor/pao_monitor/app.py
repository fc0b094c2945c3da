"""The interactive monitor: a Textual list of every agent, refreshed, with keys that act on the selected one.

Looking and acting run in worker threads (reading screens and waiting for an agent
to be ready take seconds); the list stays responsive. Attaching suspends the
monitor, hands the terminal to the agent, and comes back when the user detaches.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Callable

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Header, Input, Label

from pao_core.errors import describe
from pao_monitor.rows import COLUMNS, Row, observe_all

if TYPE_CHECKING:
    from pao_agents.spec import Agents


class Ask(ModalScreen[str | None]):
    """One line of input (the text to send, or a y/n confirmation); Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = "Ask { align: center middle; } Ask > Vertical { width: 80%; height: auto; border: round $accent; }"

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question)
            yield Input(id="answer")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class MonitorApp(App[None]):
    """``pao monitor`` on a terminal."""

    TITLE = "pao monitor"
    BINDINGS = [
        Binding("a", "attach", "attach"),
        Binding("s", "send", "send"),
        Binding("p", "pause", "pause"),
        Binding("r", "resume", "resume"),
        Binding("k", "kill", "kill"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(self, agents: Agents, *, interval: float = 1.0) -> None:
        super().__init__()
        self.agents = agents
        self.interval = interval
        self.rows: list[Row] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="agents", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        # Textual swaps in a stdout without ``encoding``; libraries imported later by a terminal
        # driver read it at import time (libtmux does).
        if not hasattr(sys.stdout, "encoding"):
            sys.stdout.encoding = "utf-8"  # type: ignore[misc]
        self.query_one(DataTable).add_columns(*COLUMNS)
        self.refresh_rows()
        self.set_interval(self.interval, self.refresh_rows)

    # -- looking -------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="look")
    def refresh_rows(self) -> None:
        try:
            rows = observe_all(self.agents)
        except Exception as exc:  # a registry or terminal problem is shown; the next refresh tries again
            self.call_from_thread(self.report, "monitor", exc)
            return
        self.call_from_thread(self.show, rows)

    def show(self, rows: list[Row]) -> None:
        table = self.query_one(DataTable)
        selected = self.selected()
        self.rows = rows
        table.clear()
        for row in rows:
            # Text, not str: a str cell is read as Rich markup, and a topic ("[link=...]") is anyone's text
            table.add_row(*map(Text, row.cells()), key=row.observation.record.name)
        names = [row.observation.record.name for row in rows]
        if selected in names:
            table.move_cursor(row=names.index(selected))

    def selected(self) -> str | None:
        table = self.query_one(DataTable)
        if not self.rows or table.cursor_row is None or table.cursor_row >= len(self.rows):
            return None
        return self.rows[table.cursor_row].observation.record.name

    # -- acting --------------------------------------------------------------------

    def routed(self, command: str, name: str, **fields: object) -> int | None:
        """Run an agent's command on the machine that runs it, through the command routers as ``pao COMMAND
        NAME --json`` would (pao-machines); its exit code, or None when the agent runs here (or no router takes it)."""
        config = self.agents.config
        if self.agents.runs_here(self.agents.registry.get(name)):
            return None
        args = argparse.Namespace(command=command, name=name, json=True, **fields)
        for router in self.agents.plugins.command_routers(config):
            code = router.route(args, config)
            if code is not None:
                return code
        return None

    def action_attach(self) -> None:
        name = self.selected()
        if name is None:
            return
        try:
            code = None
            if not self.agents.runs_here(self.agents.registry.get(name)):
                with self.suspend():
                    code = self.routed("attach", name)
                if code:
                    raise RuntimeError(f"attaching on its machine ended with exit code {code}")
            if code is None:
                record, driver = self.agents.live(name)
                attach = getattr(driver, "attach", None)
                if attach is None:
                    raise RuntimeError(f"the {driver.name} terminal cannot show an agent")
                with self.suspend():
                    attach(record.target)
        except Exception as exc:  # shown in the monitor, which keeps running
            self.report(name, exc)
        self.refresh_rows()

    def action_send(self) -> None:
        name = self.selected()
        if name is not None:
            self.push_screen(Ask(f"send to {name}:"), lambda text: text and self.act(
                name, f"sent to {name}", lambda: self.routed("send", name, text=text) is not None
                or self.agents.send(name, text)))

    def action_pause(self) -> None:
        self._act_on_selected("paused", lambda name: self.routed("pause", name) is not None or self.agents.pause(name))

    def action_resume(self) -> None:
        self._act_on_selected("resumed", lambda name: self.routed("resume", name, timeout=None) is not None
                              or self.agents.resume(name))

    def action_kill(self) -> None:
        name = self.selected()
        if name is not None:
            self.push_screen(Ask(f"kill {name}? (y to confirm)"), lambda answer: (answer or "").lower().startswith("y")
                             and self.act(name, f"killed {name}", lambda: self.routed(
                                 "kill", name, forget=False, clean=False) is not None or self.agents.kill(name)))

    def _act_on_selected(self, done: str, action: Callable[[str], object]) -> None:
        name = self.selected()
        if name is not None:
            self.act(name, f"{done} {name}", lambda: action(name))

    @work(thread=True, group="act")
    def act(self, name: str, done: str, action: Callable[[], object]) -> None:
        self.call_from_thread(self.notify, f"{name}: working...", timeout=2)
        try:
            action()
        except Exception as exc:
            self.call_from_thread(self.report, name, exc)
        else:
            self.call_from_thread(self.notify, done)
        self.call_from_thread(self.refresh_rows)

    def report(self, name: str, exc: BaseException) -> None:
        self.notify(f"{name}: {describe(exc)}", severity="error", timeout=8)
