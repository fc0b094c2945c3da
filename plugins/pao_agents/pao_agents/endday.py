"""The end of an agent's day: ``pao kill NAME...|--all``, ``pao diff NAME``, ``pao finish NAME`` (docs/lifecycle.md)."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import attrs

from pao_agents.namecompletion import completes_agent_names
from pao_core.errors import PaoError, ValidationError
from pao_core.output import print_json

if TYPE_CHECKING:
    from pao_agents.lifecycle import Agents
    from pao_core.config import PaoConfig

JSON_HELP = "print the result as one JSON object"


class _Names(argparse.Action):
    """``NAME...``; one name is also ``args.name``, so a command router (pao-machines) takes it to its machine."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        setattr(namespace, self.dest, list(values))
        namespace.name = values[0] if len(values) == 1 else None


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    kill = subparsers.add_parser("kill", help="end agents' processes and forget them (several at once, or --all)")
    completes_agent_names(kill.add_argument("names", metavar="NAME", nargs="*", action=_Names, help="the agents to end"))
    kill.add_argument("--all", action="store_true", help="every agent (with --machine: every agent of that machine)")
    kill.add_argument("--machine", metavar="M", help="with --all: only the agents machine M runs")
    kill.add_argument("--forget", action="store_true",
                      help="only forget the agent: leave its process and window alone (say, its terminal plugin is gone)")
    kill.add_argument("--clean", action="store_true",
                      help="also remove what pao added for the agent: its worktree (spawn --worktree; refused while it "
                           "has uncommitted changes), its branch when the agent committed nothing, and the CLI's trust "
                           "entries for its folder")
    kill.add_argument("--json", action="store_true", help=JSON_HELP)
    kill.set_defaults(func=run_kill, name=None)

    diff = subparsers.add_parser("diff", help="show a worktree agent's changes against its base (committed and not)")
    completes_agent_names(diff.add_argument("name", metavar="NAME"))
    diff.add_argument("--json", action="store_true", help=JSON_HELP)
    diff.set_defaults(func=run_diff)

    finish = subparsers.add_parser("finish", help="merge a worktree agent's branch into its base, end the agent, "
                                                  "remove its worktree")
    completes_agent_names(finish.add_argument("name", metavar="NAME"))
    finish.add_argument("--keep", action="store_true", help="do not merge: keep the branch pao/NAME as it is")
    finish.add_argument("--discard", action="store_true",
                        help="throw away the worktree's uncommitted changes (by default finish refuses them)")
    finish.add_argument("--json", action="store_true", help=JSON_HELP)
    finish.set_defaults(func=run_finish)


def _agents(config: PaoConfig) -> Agents:
    from pao_agents.lifecycle import Agents  # loaded on use, not at start-up

    return Agents.open(config)


def _say(message: str) -> None:
    print(f"pao: {message}", file=sys.stderr, flush=True)


# -- kill ---------------------------------------------------------------------------------------------


@attrs.frozen
class Killed:
    """One agent's kill: its record (``None`` when it failed), what became of its branch, or the error."""

    name: str
    record: Any = None
    branch: str | None = None
    error: str | None = None
    routed: bool = False


def chosen_names(args: argparse.Namespace, agents: Agents) -> list[str]:
    """The agents ``kill`` acts on, every name checked before any is ended."""
    from pao_agents.spec.options import machine_name  # loaded with the agents already

    if args.all == bool(args.names):
        raise ValidationError("name the agents to kill, or --all (not both)")
    if args.machine is not None and not args.all:
        raise ValidationError("--machine goes with --all")
    if args.all:
        here = machine_name(agents.config)
        names = [r.name for r in agents.registry.list() if args.machine in (None, r.machine or here)]
        if not names:
            raise PaoError(f"no agents to kill{' on machine ' + args.machine if args.machine else ''}")
        return names
    names = list(dict.fromkeys(args.names))
    for name in names:
        agents.registry.get(name)  # an unknown name is said before anything is ended
    return names


def kill_one(agents: Agents, name: str, *, forget: bool, clean: bool) -> Killed:
    """End one agent (on its machine through the command routers when it runs elsewhere)."""
    record = agents.registry.get(name)
    if not forget and not agents.runs_here(record):
        routed = argparse.Namespace(command="kill", name=name, names=[name], json=False, forget=False, clean=clean)
        for router in agents.plugins.command_routers(agents.config):
            if router.route(routed, agents.config) is not None:
                return Killed(name, record, routed=True)
    worktree = record.extra.get("worktree") if clean else None
    record = agents.kill(name, forget_only=forget, clean=clean)
    branch = None
    if worktree:
        from pao_agents.worktrees import tidy_branch  # loaded on use, not at start-up

        try:
            branch = tidy_branch(worktree)
        except PaoError as exc:
            branch = f"branch {worktree['branch']} kept: {exc}"
    return Killed(name, record, branch)


def run_kill(args: argparse.Namespace, config: PaoConfig) -> int:
    from concurrent.futures import ThreadPoolExecutor  # only this path needs it: start-up stays light

    agents = _agents(config)
    names = chosen_names(args, agents)
    if len(names) == 1 and not args.all:
        return _report_one(args, kill_one(agents, names[0], forget=args.forget, clean=args.clean))

    def attempt(name: str) -> Killed:
        try:
            return kill_one(agents, name, forget=args.forget, clean=args.clean)
        except PaoError as exc:
            return Killed(name, error=str(exc))

    with ThreadPoolExecutor(max_workers=min(8, len(names))) as pool:
        results = list(pool.map(attempt, names))
    failed = [result.name for result in results if result.error]
    if args.json:
        print_json({"action": "forget" if args.forget else "kill", "failed": failed, "results": {
            r.name: {"killed": r.error is None, "error": r.error, "branch": r.branch} for r in results}})
    else:
        for result in results:
            if not result.routed:
                _say(f"{result.name}: {result.error}" if result.error else _said(args, result))
    if failed:
        raise PaoError(f"kill failed for {len(failed)} of {len(results)} agents: {', '.join(failed)}")
    return 0


def _said(args: argparse.Namespace, result: Killed) -> str:
    if args.forget:
        return f"forgot {result.name} (its process, if any, was left running)"
    return f"killed {result.name}" + (f"; {result.branch}" if result.branch else "")


def _report_one(args: argparse.Namespace, result: Killed) -> int:
    if result.routed:
        return 0
    if args.json:
        extra = {"branch": result.branch} if args.clean else {}
        print_json({"action": "forget" if args.forget else "kill", "agent": _stored(result.record), **extra})
    else:
        _say(_said(args, result))
    return 0


def _stored(record: Any) -> dict[str, Any]:
    """The agent's record as ``pao list --json`` has it (not observed: it is gone)."""
    from pao_core.models import converter  # records: loaded with the agents already

    return converter.unstructure(record)


# -- diff and finish ------------------------------------------------------------------------------------


def _worktree(agents: Agents, name: str, command: str) -> dict[str, str]:
    record = agents.here(name)
    worktree = record.extra.get("worktree")
    if not worktree:
        raise ValidationError(f"agent {name!r} has no worktree of its own ('pao spawn --worktree' makes one), so "
                              f"'pao {command}' has nothing to show or merge")
    return worktree


def run_diff(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_agents.worktrees import base_commit, changes  # loaded on use, not at start-up
    from pao_core.sanitize import strip_controls  # only this path needs it: start-up stays light

    worktree = _worktree(_agents(config), args.name, "diff")
    text = strip_controls(changes(worktree))  # the agent wrote it: no escape sequence reaches the terminal
    if args.json:
        print_json({"action": "diff", "name": args.name, "branch": worktree["branch"], "base": worktree.get("base"),
                    "base_commit": base_commit(worktree), "diff": text})
    elif not text:
        _say(f"{args.name} has no changes against {worktree.get('base') or base_commit(worktree)[:12]}")
    else:
        page(text)
    return 0


def page(text: str) -> None:
    """``text`` on stdout, through a pager (``$PAGER``, else ``less -FX``) only when stdout is a terminal."""
    argv = shlex.split(os.environ.get("PAGER") or "less -FX") if sys.stdout.isatty() else []
    if argv and shutil.which(argv[0]):
        sys.stdout.flush()
        subprocess.run(argv, input=text, text=True, errors="replace", check=False)  # no shell: PAGER is split into words
        return
    sys.stdout.write(text)


def run_finish(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_agents import worktrees  # loaded on use, not at start-up

    agents = _agents(config)
    worktree = _worktree(agents, args.name, "finish")
    pending = worktrees.uncommitted(worktree)
    if pending and not args.discard:
        raise ValidationError(f"the worktree of agent {args.name!r}, {worktree['root']}, has {len(pending)} uncommitted "
                              "change(s): commit them, or 'pao finish --discard' throws them away (nothing was changed)")
    ahead = worktrees.commits_beyond_base(worktree)
    merged = None if args.keep or not ahead else worktrees.merge_into_base(worktree)
    record = agents.kill(args.name, clean=True, discard=args.discard)
    branch = "kept" if args.keep else worktrees.delete_branch(worktree) or "deleted"
    done = [f"merged {worktree['branch']} ({ahead} commit(s)) into {worktree['base']} at {merged[:12]}" if merged
            else "nothing to merge" if not args.keep else f"kept {worktree['branch']}",
            "worktree removed" + (f", {len(pending)} uncommitted change(s) discarded" if pending else "")]
    if not args.keep:
        done.append(f"branch {worktree['branch']} {branch}" if branch == "deleted" else f"branch kept: {branch}")
    if args.json:
        print_json({"action": "finish", "agent": _stored(record), "merged": merged, "commits": ahead,
                    "branch": branch, "discarded": len(pending)})
    else:
        _say(f"finished {args.name}: " + "; ".join(done))
    return 0

