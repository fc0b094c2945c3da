"""``pao list``: what an agent's state is and how the list is printed, and the list before any plugin loads.

Both ways to answer ``pao list`` end here: the full command (``commands.show_list``,
records and terminal drivers from the plugins) and :func:`light_list`, which the command's
light entry runs with the standard library before any plugin, record class or configuration
check loads (together most of the full command's time; libtmux's import alone costs more than
the light answer). They share :func:`observed_state`, :func:`observed_json` and
:func:`print_listing`; only how records are read and how liveness is asked differ.
:func:`light_list` answers only when the full command is certain to give the same answer, else
returns ``None`` and the full command runs:

- the arguments are ``list`` or ``list --json``;
- no plugin but pao's own could route ``list`` or keep the registry elsewhere (pao-machines
  routes ``list`` only for agents on other machines; pao-postgres keeps registries at
  ``postgresql://`` URLs only), and pao-agents' ``agents.json`` store is installed;
- a full ``pao list`` found this very configuration valid, with the registry in
  ``agents.json``: same file content, same environment, same installed plugins (the
  check's digest, :func:`_digest`, one of the last few kept in pao's cache folder, with the machine
  name it set);
- every record reads back unchanged (:data:`RECORD_FIELDS`: the fields of
  ``pao_agents.spec.AgentRecord``, in its order, each of its type) and runs on this machine;
- every agent that is not paused is in tmux, whose only driver is pao-tmux's (asked once per
  tmux server, :func:`pao_tmux.panes.live_panes`, for what the driver's ``is_alive`` says).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from pao_agents.agentdir import EVENTS, read_events, session_receipt
from pao_agents.states import newest_verdict
from pao_core.output import plain, print_json, print_table
from pao_core.paths import cache_path, config_path, home_path, host_name

OWN_PLUGINS = {"pao_registry_stores": {"pao_agents.registry", "pao_postgres.hooks"},
               "pao_command_routers": {"pao_machines.hooks"}}
"""The hooks that could take ``list`` elsewhere, and the plugins (entry points) known to leave it here."""
OWN_DRIVERS = {"pao_tmux.hooks", "pao_terminalapp.hooks"}
"""pao's own terminal drivers: with only these, a ``tmux`` agent is pao-tmux's (the only driver so named)."""
CHECKED = "list-config.json"
REMEMBERED = 8
"""How many checked configurations are kept (one per ``PAO_HOME`` and configuration file in use)."""
LIST_FIELDS = ("host", "terminal")
TOPIC_WIDTH = 40
"""The most of an agent's topic a list shows (``pao list --json`` and ``pao status`` have all of it)."""
GONE = "its process or terminal is gone"
TEXT, MAYBE_TEXT = (str,), (str, type(None))
STATES = frozenset({"starting", "ready", "busy", "waiting", "blocked", "failed", "paused", "dead"})
RECORD_FIELDS: Mapping[str, Any] = {
    "name": TEXT, "folder": TEXT, "topic": TEXT, "host": TEXT, "terminal": TEXT, "target": TEXT, "machine": TEXT,
    "state": STATES, "pid": (int, type(None)), "session_id": MAYBE_TEXT, "briefing_hash": MAYBE_TEXT,
    "created_at": dt.datetime, "updated_at": dt.datetime, "extra": (dict,),
}
"""``AgentRecord``'s fields as ``agents.json`` keeps them (plugins/pao_agents/tests/test_light_list.py holds the two together)."""


# -- shared by the full command and the light one ---------------------------------------------------------


def observed_state(state: str, extra: Mapping[str, Any], session_id: str | None,
                   alive: bool) -> tuple[str, str | None, str, float | None]:
    """``(state, reason, source, receipt)`` of an agent of this machine, without reading its screen: paused,
    dead, else its CLI's newest event that implies a state (``source="hooks"``, with the session's receipt), else
    its recorded state (``source="screen"``: an agent whose hooks are off, or that reported nothing yet, is read
    from its screen where the caller reads one)."""
    if state == "paused":
        return "paused", None, "hooks" if extra.get("events") else "screen", None
    recorded = extra.get("waiting_for") if state == "waiting" else None  # what spawn saw it wait for (a trust question)
    if not extra.get("events"):
        return ("dead", GONE, "screen", None) if not alive else (state, recorded, "screen", None)
    events = read_events(Path(extra["agent_dir"], EVENTS))
    verdict, receipt = newest_verdict(events), session_receipt(events, session_id)
    if not alive:
        return "dead", GONE, "hooks", receipt
    if verdict is None:
        return state, recorded, "screen", receipt
    return verdict.state or state, verdict.reason, verdict.source, receipt


def observed_json(data: dict[str, Any], state: str, reason: str | None, source: str,
                  receipt: float | None) -> dict[str, Any]:
    """An agent's public JSON shape: its stored record ``data`` with what was observed of it."""
    stamp = None if receipt is None else dt.datetime.fromtimestamp(receipt, dt.timezone.utc).isoformat()
    return {**data, "observed": {"state": state, "reason": reason}, "state_source": source,
            "delivery": {"channel": data["extra"].get("delivery", "file"), "receipt": stamp}}


def print_listing(entries: Sequence[Mapping[str, Any]], here: str, as_json: bool) -> None:
    """``pao list``'s output of ``entries`` (:func:`observed_json`'s), a machine column when one runs elsewhere."""
    if as_json:
        print_json({"agents": list(entries)})
        return
    fields = list(LIST_FIELDS)
    if any(entry["machine"] != here for entry in entries):  # a shared registry: say where each one runs
        fields.insert(0, "machine")
    print_table(list_header(fields), [_row(entry, fields) for entry in entries])


def list_header(fields: Sequence[str] = LIST_FIELDS) -> list[str]:
    return ["NAME", "STATE", *map(str.upper, fields), "AGE", "TOPIC", "FOLDER"]


def _row(entry: Mapping[str, Any], fields: Sequence[str]) -> list[str]:
    state, reason = entry["observed"]["state"], entry["observed"]["reason"]
    shown = state + (f" ({reason})" if reason and state in ("blocked", "waiting", "failed", "unknown") else "")
    created = dt.datetime.fromisoformat(entry["created_at"])
    return [entry["name"], shown, *(str(entry[field]) for field in fields), age_text(created), topic_cell(entry["topic"]),
            entry["folder"]]


def topic_cell(topic: Any) -> str:
    """An agent's topic in a table cell: one line, no control or escape sequence (a registry is not trusted), at
    most :data:`TOPIC_WIDTH` characters."""
    text = " ".join(plain(topic).split())
    return text if len(text) <= TOPIC_WIDTH else text[:TOPIC_WIDTH - 1].rstrip() + "…"


def age_text(created: dt.datetime) -> str:
    seconds = max(0, int((dt.datetime.now(dt.timezone.utc) - created).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


# -- the light command ----------------------------------------------------------------------------------


def light_list(argv: Sequence[str], index: Mapping[str, Any]) -> int | None:
    """``pao list [--json]`` when nothing could make the full command answer otherwise; else ``None``."""
    if list(argv) not in (["list"], ["list", "--json"]) or not _own_registry_and_routers(index["plugins"]):
        return None
    try:
        digest, checked = _digest(index, os.environ), _checked()
        if digest not in checked:
            return None
        here = checked[digest] or host_name()
        records = _stored_records(here)
        alive = None if records is None else _liveness(records, index["plugins"])
        if alive is None:
            return None
        entries = [observed_json(record, *observed_state(record["state"], record["extra"], record["session_id"],
                                                         alive.get(record["name"], False))) for record in records]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # the full command says what is wrong
        return None
    print_listing(entries, here, argv[-1] == "--json")
    return 0


def _own_registry_and_routers(plugins: Sequence[Mapping[str, Any]]) -> bool:
    if any(hook in entry["hooks"] and entry["value"] not in known for entry in plugins for hook, known in OWN_PLUGINS.items()):
        return False
    return any(entry["value"] == "pao_agents.registry" and "pao_registry_stores" in entry["hooks"] for entry in plugins)


def _stored_records(here: str) -> list[dict[str, Any]] | None:
    """``agents.json``'s records as the full command prints them, oldest first; ``None`` unless each one reads
    back unchanged and runs on this machine (``here``)."""
    try:
        with open(os.path.join(home_path(), "agents.json"), encoding="utf-8") as stream:
            document = json.loads(stream.read() or "{}")
    except FileNotFoundError:
        document = {}
    stored = document.get("agents", {})
    records = [_as_stored(name, raw) for name, raw in stored.items()]
    if not all(record is not None and record["machine"] == here for record in records):
        return None
    return sorted(records, key=lambda record: (dt.datetime.fromisoformat(record["created_at"]), record["name"]))


def _as_stored(name: str, raw: Any) -> dict[str, Any] | None:
    """The record (keyed ``name`` in the file) with its fields in order, or ``None`` when reading it would change it."""
    if not isinstance(raw, dict) or {**raw, "name": name}.keys() != RECORD_FIELDS.keys():
        return None
    record = {field: name if field == "name" else raw[field] for field in RECORD_FIELDS}
    return record if all(_unchanged(record[field], kind) for field, kind in RECORD_FIELDS.items()) else None


def _unchanged(value: Any, kind: Any) -> bool:
    if kind is dt.datetime:  # read with fromisoformat, printed with isoformat: only an aware, canonical time survives
        try:
            when = dt.datetime.fromisoformat(value)
        except (TypeError, ValueError):
            return False
        return when.tzinfo is not None and when.isoformat() == value
    if isinstance(kind, frozenset):
        return isinstance(value, str) and value in kind
    return isinstance(value, kind) and not isinstance(value, bool)


def _liveness(records: Sequence[Mapping[str, Any]], plugins: Sequence[Mapping[str, Any]]) -> dict[str, bool] | None:
    """Whether each agent that is not paused is alive, by name; ``None`` when only its driver can say."""
    asked = [record for record in records if record["state"] != "paused"]
    if not asked:
        return {}
    drivers = {entry["value"] for entry in plugins if "pao_terminal_drivers" in entry["hooks"]}
    if "pao_tmux.hooks" not in drivers or not drivers <= OWN_DRIVERS or any(r["terminal"] != "tmux" for r in asked):
        return None
    from pao_tmux.panes import live_panes, split_target  # pao-tmux's (its hooks are installed): no libtmux

    targets = {record["name"]: split_target(record["target"]) for record in asked if record["target"]}
    if None in targets.values():
        return None
    live = {socket: live_panes(socket) for socket in {socket for socket, _ in targets.values()}}
    if None in live.values():
        return None
    return {name: pane in live[socket] for name, (socket, pane) in targets.items()}


def _digest(index: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    """What checking the configuration depends on: the file, the environment it reads, the installed plugins and
    their tables (the plugin index's key and files); ``None`` when the index cannot say which tables there are."""
    import hashlib  # only this path needs it: start-up stays light

    if index.get("tables") is None:
        return None
    names = {"PAO_CONFIG", "PAO_HOME", "PAO_REGISTRY_URL"} | {name for *_, env in index["tables"] for name in env}
    path = config_path(environ)
    try:
        content = b"+" + path.read_bytes()
    except FileNotFoundError:
        content = b"-"
    digest = hashlib.sha256(json.dumps([index["key"], index["files"], index["tables"], str(path),
                                        {name: environ.get(name) for name in sorted(names)}]).encode())
    digest.update(content)
    return digest.hexdigest()


def _checked() -> dict[str, str]:
    """The digests of the configurations a full ``pao list`` found valid, each with its ``[machine] name``."""
    try:
        with open(cache_path(CHECKED), encoding="utf-8") as stream:
            checked = json.load(stream)
    except (OSError, ValueError):  # none yet, or unreadable: written again
        return {}
    return checked if isinstance(checked, dict) else {}


def remember_checked(config: Any, index: Mapping[str, Any] | None) -> None:
    """After a full ``pao list`` found the configuration valid, the next one may answer lightly (best effort)."""
    from pao_agents.spec.options import MachineOptions, registry_options  # the full path's: loaded already
    from pao_core.files import atomic_write  # only this path needs it: start-up stays light

    machine = config.options("machine", "", MachineOptions).name
    try:
        digest = None if index is None or registry_options(config).url else _digest(index, os.environ)
    except OSError:
        return
    checked = _checked()
    if digest is None or checked.get(digest) == machine:
        return
    checked.pop(digest, None)
    kept = dict(list(checked.items())[1 - REMEMBERED:] + [(digest, machine)])  # the newest, this one last
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(cache_path(CHECKED)), exist_ok=True)
        atomic_write(cache_path(CHECKED), json.dumps(kept), mode=0o600)
