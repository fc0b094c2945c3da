"""Agent commands: spawn, list, status, attach, send, broadcast, kill, pause, resume, checkpoint."""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
import sys
import time
from typing import TYPE_CHECKING, Any

from pao_agents.spec.options import machine_name, spawn_options, with_spawn
from pao_agents.spec.calls import host_agents
from pao_core.config import PaoConfig
from pao_agents.spec.contracts import PERMISSION_MODES, permission_summary
from pao_core.errors import PaoError, ValidationError
from pao_core.hookspecs import hookimpl
from pao_agents.agentdir import RECEIPT_TIMEOUT
from pao_agents.namecompletion import completes_agent_names
from pao_agents.light import observed_json, print_listing, remember_checked
from pao_core.output import print_json

if TYPE_CHECKING:
    from pao_agents.lifecycle import Agents, Observation
    from pao_core.contracts import BriefingDeliverer
    from pao_core.plugins import Plugins


JSON_HELP = "print the result as one JSON object"


@hookimpl
def pao_briefing_deliverers(config: PaoConfig, plugins: Plugins) -> list[BriefingDeliverer]:
    from pao_agents.delivery import HostDelivery  # loaded on use, not at start-up

    return [HostDelivery(config, plugins)]


@hookimpl
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    _add_spawn(subparsers, config)

    listing = subparsers.add_parser("list", help="list the agents pao started")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=run_list, light="pao_agents.light:light_list")

    status = subparsers.add_parser("status", help="show one agent: record and what its screen says now")
    completes_agent_names(status.add_argument("name", metavar="NAME"))
    status.add_argument("--screen", action="store_true", help="also print the agent's current screen")
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(func=run_status)

    send = subparsers.add_parser("send", help="paste TEXT into an agent and submit it")
    completes_agent_names(send.add_argument("name", metavar="NAME"))
    send.add_argument("text", metavar="TEXT")
    send.add_argument("--receipt-timeout", metavar="SECONDS", type=float, default=RECEIPT_TIMEOUT, help=RECEIPT_HELP)
    send.add_argument("--json", action="store_true", help=JSON_HELP)
    send.set_defaults(func=run_send)

    broadcast = subparsers.add_parser("broadcast", help="send TEXT to every running agent")
    broadcast.add_argument("text", metavar="TEXT")
    broadcast.add_argument("--only", metavar="NAMES", help="comma-separated agent names")
    broadcast.add_argument("--json", action="store_true", help=JSON_HELP)
    broadcast.set_defaults(func=run_broadcast)

    _add_process_commands(subparsers, config)

    from pao_agents.endday import add_commands  # kill, diff, finish
    from pao_agents.trust import add_command  # its parser only: the command's code loads on use

    add_commands(subparsers)
    add_command(subparsers)

    attach = subparsers.add_parser("attach", help="show an agent: attach its tmux window, or bring its window forward")
    completes_agent_names(attach.add_argument("name", metavar="NAME"))
    attach.set_defaults(func=run_attach)


def _add_spawn(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    spawn = subparsers.add_parser("spawn", help="start a primed agent on TOPIC")
    spawn.add_argument("topic", metavar="TOPIC", help="what the agent works on; may name its folder (in ~/code/api)")
    spawn.add_argument("--folder", metavar="DIR", help="the agent's working folder (default: named in TOPIC, or .)")
    spawn.add_argument("--name", metavar="NAME", help="the agent's name (default: the folder's name, made unique)")
    spawn.add_argument("--terminal", metavar="DRIVER", help=f"terminal driver (default: {spawn_options(config).terminal or 'the first available'})")
    spawn.add_argument("--host", metavar="HOST", help=f"coding agent to start (default: {spawn_options(config).host or 'the first installed'})")
    spawn.add_argument("--no-nudge", action="store_true", help="do not give the agent its task (only the briefing)")
    spawn.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                       help=f"how long to wait for the agent to be ready (default {spawn_options(config).ready_timeout:g})")
    spawn.add_argument("--permission-mode", choices=PERMISSION_MODES, metavar="MODE",
                       help="default: the agent asks before running commands; acceptEdits, plan, auto; bypass: it runs "
                            "every command without asking (opt-in; once for all in [hosts.NAME] permission_mode)")
    spawn.add_argument("--no-mcp", action="store_true",
                       help="no MCP server for this session (by default pao's memory tools, docs/mcp.md)")
    spawn.add_argument(
        "--worktree", action="store_true",
        help="start the agent in a new git worktree of the folder (branch pao/NAME; 'pao kill --clean' removes it)",
    )
    spawn.add_argument("--let-cli-ask", action="store_true",
                       help="a folder pao may not pre-trust: start anyway and leave the CLI's own trust dialog to you "
                            "(the agent is 'waiting'); default: refuse (docs/security.md, Folder trust)")
    spawn.add_argument("--json", action="store_true", help="print the agent's record and step times as JSON")
    spawn.add_argument("--on", metavar="TARGET", help="start it on another machine: [user@]host, ssh://user@host:port "
                       "or a [machines.NAME] (docs/machines.md)")
    spawn.add_argument("--briefing-stdin", action="store_true", help=argparse.SUPPRESS)  # spawn --on's remote half
    spawn.set_defaults(func=run_spawn, light="pao_agents.ahead:before_spawn")  # it starts the spawn's helpers


def _add_process_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    """The commands that pause, resume or checkpoint one agent's process."""
    for command, help_text, func in (
        ("pause", "checkpoint an agent and end its process; 'pao resume' brings it back", run_pause),
        ("resume", "relaunch a paused or dead agent, continuing its session", run_resume),
        ("checkpoint", "save an agent's screen, session id and briefing for a later resume", run_checkpoint),
    ):
        parser = subparsers.add_parser(command, help=help_text)
        completes_agent_names(parser.add_argument("name", metavar="NAME"))
        parser.add_argument("--json", action="store_true", help=JSON_HELP)
        parser.set_defaults(func=func)
        if command == "resume":
            parser.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                                help=f"how long to wait for the agent to be ready (default {spawn_options(config).ready_timeout:g})")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds greater than 0, not {text!r}")
    return value


NEXT_WAIT = {"6 spawn": "waiting until the agent is ready", "7 ready": "sending the task"}
"""What a spawn waits for after a step, shown on the progress line."""


def _agents(config: PaoConfig) -> Agents:
    from pao_agents.lifecycle import Agents  # loaded on use, not at start-up

    return Agents.open(config)


def _say(message: str) -> None:
    print(f"pao: {message}", file=sys.stderr, flush=True)


def run_spawn(args: argparse.Namespace, config: PaoConfig) -> int:
    import attrs  # only this path needs it: start-up stays light

    from pao_agents.ahead import end_helpers  # loaded on use, not at start-up
    from pao_agents.spawn import spawn  # loaded on use, not at start-up
    from pao_core.plugins import get_plugins  # pluggy, entry points: loaded on use
    from pao_agents.spec.progress import Progress  # loaded on use, not at start-up

    if args.on:  # no router took it
        raise PaoError("'pao spawn --on' needs the pao-machines plugin (docs/machines.md)")
    given = _briefing_from_stdin() if args.briefing_stdin else None
    if args.timeout is not None:
        config = with_spawn(config, ready_timeout=args.timeout)
    if args.permission_mode:  # this spawn only: the host's table with the mode the user chose
        host_name = args.host or spawn_options(config).host or _first_host(config)
        table = {**config.hosts.get(host_name, {}), "permission_mode": args.permission_mode}
        config = attrs.evolve(config, hosts={**config.hosts, host_name: table})
    plugins = get_plugins()
    with Progress("spawning") as progress:

        def report(step: str, seconds: float, detail: str) -> None:
            progress.say(f"pao: {step:<20} {seconds * 1000:8.1f} ms  {detail}")
            progress.update(NEXT_WAIT.get(step, f"{step} done"))

        try:
            result = spawn(
                args.topic,
                folder=args.folder,
                name=args.name,
                terminal=args.terminal,
                host=args.host,
                nudge=False if args.no_nudge else None,
                worktree=args.worktree,
                mcp=not args.no_mcp,
                config=config,
                plugins=plugins,
                report=report,
                briefing=given,
                parallel=True,
                let_cli_ask=args.let_cli_ask or None,
            )
        finally:
            end_helpers()  # their work is done, or will not be needed
    host = next((h for h in host_agents(plugins, config) if h.name == result.record.host), None)
    mode = host.permission_mode() if host is not None else "unknown"
    _say(f"permission mode: {mode} ({result.record.host} {permission_summary(mode)}; choose with --permission-mode)")

    if args.json:
        data = record_json(result.record)
        data["steps"] = [{"step": step, "ms": round(seconds * 1000, 1)} for step, seconds in result.steps]
        print_json(data)
    else:
        record = result.record
        print(f"{record.name}\t{record.state}\t{record.target}\t{record.folder}")
    _say(f"attach with: pao attach {shlex.quote(result.record.name)}")
    return 0


def _briefing_from_stdin() -> Any:
    """A briefing composed on another machine (``spawn --on``), as JSON on stdin, cleaned again here."""
    import json  # only this path needs it: start-up stays light

    import attrs  # only this path needs it: start-up stays light
    import cattrs  # only this path needs it: start-up stays light

    from pao_core.models import Briefing, converter  # records: only this path needs them
    from pao_core.sanitize import redact_secrets, strip_controls  # only this path needs it

    try:
        briefing = converter.structure(json.loads(sys.stdin.read()), Briefing)
    except (ValueError, TypeError, cattrs.BaseValidationError) as exc:
        raise PaoError(f"the briefing on stdin is not readable ({exc})") from None
    return attrs.evolve(briefing, markdown=redact_secrets(strip_controls(briefing.markdown)))


def record_json(record: Any, observation: Observation | None = None) -> dict[str, Any]:
    """The public JSON shape of an agent: its registry record (+ ``observed`` when looked at)."""
    from pao_core.models import converter  # records: only this path needs them (pao_core loads them lazily)

    data = converter.unstructure(record)
    if observation is None:
        return data
    return observed_json(data, observation.state, observation.reason, observation.source, observation.receipt)


def run_list(args: argparse.Namespace, config: PaoConfig) -> int:
    agents = _agents(config)
    return show_list(args, config, agents, agents.registry.list())


def show_list(args: argparse.Namespace, config: PaoConfig, agents: Agents, records: list[Any]) -> int:
    """``pao list`` of ``records`` (this machine's, or a shared registry's), each observed here."""
    remember_checked(config, agents.plugins.catalog)  # the next list may answer before any plugin loads
    seen = [agents.observe(record, with_screen=False) for record in records]
    print_listing([record_json(o.record, o) for o in seen], machine_name(config), args.json)
    return 0


def run_status(args: argparse.Namespace, config: PaoConfig) -> int:

    agents = _agents(config)
    observation = agents.observe(agents.registry.get(args.name), show_screen=args.screen)
    agents.refresh(observation)
    if args.json:
        data = record_json(observation.record, observation)
        if args.screen:
            data["screen"] = observation.screen
        print_json(data)
        return 0
    from pao_agents.statusview import print_status  # loaded on use, not at start-up

    print_status(record_json(observation.record, observation))
    if args.screen:
        sys.stdout.write(observation.screen)
    return 0


def _done(args: argparse.Namespace, action: str, message: str, record: Any = None, **extra: Any) -> None:
    """An action's result: ``--json`` prints one object on stdout, otherwise one line on stderr."""

    if args.json:
        print_json({"action": action, **({"agent": record_json(record)} if record is not None else {}), **extra})
    else:
        _say(message)


RECEIPT_HELP = (f"wait this long for the CLI's own event of the submitted prompt, then press the submit key once more "
                f"and wait again; exit 1 without it (default: {RECEIPT_TIMEOUT:g}; 0: the screen's confirmation only)")


def run_send(args: argparse.Namespace, config: PaoConfig) -> int:
    if not 0 <= args.receipt_timeout <= 600:
        raise ValidationError("--receipt-timeout must be between 0 and 600 seconds")
    agents = _agents(config)
    received = agents.send(args.name, args.text, receipt_timeout=args.receipt_timeout)
    said = "submitted, confirmed by its CLI" if received is not None else "submitted, confirmed on its screen"
    stamp = None if received is None else dt.datetime.fromtimestamp(received, dt.timezone.utc).isoformat()
    _done(args, "send", f"sent to {args.name} ({said})", agents.registry.get(args.name), receipt=stamp)
    return 0


def run_broadcast(args: argparse.Namespace, config: PaoConfig) -> int:

    agents = _agents(config)
    only = [name.strip() for name in args.only.split(",") if name.strip()] if args.only else None
    outcome = agents.for_each(only, lambda name: agents.send(name, args.text))
    if not outcome:
        raise PaoError("no running agents to send to")
    failed = [name for name, error in outcome.items() if error]
    if args.json:
        results = {name: {"sent": error is None, "error": error} for name, error in outcome.items()}
        _done(args, "broadcast", "", results=results, failed=failed)
    else:
        for name, error in outcome.items():
            _say(f"{name}: {error}" if error else f"sent to {name}")
    if failed:
        raise PaoError(f"broadcast failed for {len(failed)} of {len(outcome)} agents: {', '.join(failed)}")
    return 0


def run_pause(args: argparse.Namespace, config: PaoConfig) -> int:
    record = _agents(config).pause(args.name)
    checkpoint = record.extra.get("checkpoint")
    _done(args, "pause", f"paused {record.name} (checkpoint {checkpoint}); 'pao resume {record.name}' resumes it",
          record, checkpoint=checkpoint)
    return 0


def run_resume(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_agents.spec.progress import Progress  # loaded on use, not at start-up

    started = time.monotonic()
    with Progress(f"resuming {args.name}", delay=0.5) as progress:
        progress.update("waiting until the agent is ready")
        record = _agents(config).resume(args.name, timeout=args.timeout)
    elapsed_ms = round((time.monotonic() - started) * 1000, 1)
    _done(args, "resume", f"resumed {record.name} in {record.target} ({elapsed_ms:.0f} ms)", record,
          elapsed_ms=elapsed_ms)
    return 0


def run_checkpoint(args: argparse.Namespace, config: PaoConfig) -> int:
    agents = _agents(config)
    path = agents.checkpoint(args.name)
    if args.json:
        _done(args, "checkpoint", "", agents.registry.get(args.name), checkpoint=str(path))
    else:
        print(path)
    return 0


def run_attach(args: argparse.Namespace, config: PaoConfig) -> int:
    record, driver = _agents(config).live(args.name)
    driver.attach(record.target)
    return 0


def _first_host(config: PaoConfig) -> str:
    from pao_core.plugins import get_plugins  # pluggy, entry points: loaded on use

    hosts = host_agents(get_plugins(), config)
    return hosts[0].name if hosts else ""
