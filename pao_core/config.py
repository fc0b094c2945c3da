"""Configuration: one TOML file, environment overrides, cattrs-structured, strict.

The file is ``$PAO_CONFIG`` or ``config.toml`` in the platform's config folder; all
state lives under ``$PAO_HOME`` (default: the platform's data folder). Core options
are typed here; each plugin's options live in a table of its own
(``[backends.NAME]``, ``[terminals.NAME]``, ``[hosts.NAME]``) that the plugin
declares through ``pao_config_tables`` (with its environment variables) and
structures with :meth:`PaoConfig.options`. Every table present is validated at
load time: an unknown key or an out-of-range value is a :class:`ConfigError`
naming the file, the key and what is allowed.
"""

from __future__ import annotations

import os
import re
import tomllib
import typing
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, TypeVar

import attrs
import cattrs

from pao_core.contracts import PLUGIN_TABLES, ConfigTable
from pao_core.errors import ConfigError
from pao_core.paths import config_path, home_path, host_name

T = TypeVar("T")

def positive(instance: object, attribute: attrs.Attribute, value: float) -> None:
    """attrs validator: the value must be greater than zero."""
    if value <= 0:
        raise ValueError(f"{attribute.name}: must be greater than 0, not {value!r}")


def at_least(minimum: float) -> Any:
    """attrs validator: the value must be at least ``minimum``."""

    def check(instance: object, attribute: attrs.Attribute, value: float) -> None:
        if value < minimum:
            raise ValueError(f"{attribute.name}: must be at least {minimum}, not {value!r}")

    return check


def share(instance: object, attribute: attrs.Attribute, value: float) -> None:
    """attrs validator: a share between 0 and 1."""
    if not 0 <= value <= 1:
        raise ValueError(f"{attribute.name}: must be between 0 and 1, not {value!r}")

_SECRET_KEY = re.compile(r"(password|secret|token|api_?key|auth)", re.IGNORECASE)


MIN_BUDGET_CHARS = 400
"""Room for the briefing's header and footer; a smaller budget is a configuration error."""


@attrs.frozen
class GatherOptions:
    deadline: float = attrs.field(default=2.0, validator=positive)
    limit: int = attrs.field(default=20, validator=at_least(1))


@attrs.frozen
class BriefingOptions:
    """``[briefing]``: the file's name, its size budget and how fusion ranks and cuts.

    ``floors`` maps a backend name to the lowest native score kept from it;
    ``relative_floor`` drops items below that share of their backend's best score.
    """

    budget_chars: int = attrs.field(default=6000, validator=at_least(MIN_BUDGET_CHARS))
    filename: str = "CONTEXT_BRIEFING.md"
    max_items: int = attrs.field(default=12, validator=at_least(1))
    item_chars: int = attrs.field(default=600, validator=at_least(1))
    rrf_k: int = attrs.field(default=60, validator=at_least(0))
    floors: Mapping[str, float] = attrs.field(factory=dict)
    relative_floor: float = attrs.field(default=0.0, validator=share)
    duplicate_similarity: float = attrs.field(default=0.5, validator=share)
    agent_items: int = attrs.field(default=3, validator=at_least(0))  # facts agents wrote, per briefing


@attrs.frozen
class SpawnOptions:
    """``[spawn]``: the default host and terminal (``""``: the first terminal driver available here)."""

    host: str = "claude-code"
    terminal: str = ""
    nudge: bool = True
    ready_timeout: float = attrs.field(default=45.0, validator=positive)
    delivery: Literal["session", "file"] = "session"
    """``session``: the host CLI's own per-session channel where it has one; ``file``: CONTEXT_BRIEFING.md in the folder."""


NOTIFY_STATES = ("waiting", "blocked", "dead", "finished", "failed", "ready", "busy", "starting", "paused")


def _known_states(instance: object, attribute: attrs.Attribute, value: tuple[str, ...]) -> None:
    unknown = [state for state in value if state not in NOTIFY_STATES]
    if unknown:
        raise ValueError(f"{attribute.name}: {', '.join(map(repr, unknown))} not among {', '.join(NOTIFY_STATES)}")


@attrs.frozen
class NotifyOptions:
    """``[notify]``: desktop notifications when an agent enters one of ``states`` (off unless ``desktop = true``)."""

    desktop: bool = False
    states: tuple[str, ...] = attrs.field(default=("waiting", "blocked", "dead", "finished", "failed"),
                                          validator=_known_states)


MACHINE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


def _machine_name(instance: object, attribute: attrs.Attribute, value: str) -> None:
    if value and not MACHINE_NAME.fullmatch(value):
        raise ValueError(f"{attribute.name}: letters, digits, '.', '_' and '-' (up to 63, not {value!r})")


def _registry_url(instance: object, attribute: attrs.Attribute, value: str) -> None:
    if value and "://" not in value:  # never echoed: "user:password@host" without a scheme cannot be masked
        raise ValueError(f"{attribute.name}: must be a URL such as postgresql://user@host:5432/db")


@attrs.frozen
class MachineOptions:
    """``[machine]``: this machine's name in the registry (default: the short host name)."""

    name: str = attrs.field(default="", validator=_machine_name)


@attrs.frozen
class RegistryOptions:
    """``[registry]``: where the agent registry is kept (``""``: ``agents.json`` under ``PAO_HOME``)."""

    url: str = attrs.field(default="", validator=_registry_url)


@attrs.frozen
class PaoConfig:
    """The effective configuration of one ``pao`` run."""

    home: Path = attrs.field(metadata={"from_file": False})
    source: Path | None = attrs.field(default=None, metadata={"from_file": False})
    gather: GatherOptions = GatherOptions()
    briefing: BriefingOptions = BriefingOptions()
    spawn: SpawnOptions = SpawnOptions()
    notify: NotifyOptions = NotifyOptions()
    machine: MachineOptions = MachineOptions()
    registry: RegistryOptions = RegistryOptions()
    backends: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    terminals: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    hosts: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    machines: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    """``[machines.NAME]``: other machines agents run on (read by pao-machines, docs/machines.md)."""
    trust: Mapping[str, Any] = attrs.field(factory=dict)
    """``[trust]``: folders the user trusts (read by pao-agents, ``options("trust", "", ...)``; docs/security.md)."""

    def options(self, table: str, name: str, cls: type[T]) -> T:
        """Structure the plugin table ``[table.name]`` (``name`` empty: the table ``[table]``) into ``cls``.

        Raises :class:`ConfigError` naming the file, the key and what is wrong.
        """
        raw = getattr(self, table).get(name, {}) if name else getattr(self, table)  # "": the whole table
        try:
            return _converter.structure(dict(raw), cls)
        except (cattrs.BaseValidationError, ValueError, TypeError) as exc:
            raise ConfigError(_describe(exc, self.source, f"{table}.{name}" if name else table)) from None

    def machine_name(self) -> str:
        """This machine's name: ``[machine] name``, else the short host name."""
        return self.machine.name or host_name()

    def masked(self) -> dict[str, Any]:
        """The configuration as plain data with passwords and tokens masked."""
        return _mask(_converter.unstructure(self))


def _describe(exc: Exception, source: Path | None, prefix: str) -> str:
    where = str(source) if source else "configuration"
    if isinstance(exc, cattrs.BaseValidationError):
        messages = cattrs.transform_error(exc, path=prefix, format_exception=_format_exception)
        return f"{where}: " + "; ".join(_key_first(message) for message in messages)
    return f"{where}: {prefix}: {exc}"


CORE_PATH = "config"
_ATTRS_REASON = re.compile(r"^'(?P<field>[A-Za-z_][A-Za-z0-9_]*)' (?P<reason>must .*)$")
_FIELD_REASON = re.compile(r"^(?P<field>[A-Za-z_][A-Za-z0-9_]*): (?P<reason>.*)$")


def _key_first(message: str) -> str:
    """cattrs says ``problem @ path``; say ``path.key: problem`` (a validator's reason names its key)."""
    problem, _, path = message.rpartition(" @ ")
    if not path:
        return message
    if path == CORE_PATH:
        return problem
    path = path.removeprefix(f"{CORE_PATH}.")
    named = _FIELD_REASON.match(problem)
    if named:
        return f"{path}.{named['field']}: {named['reason']}"
    return f"{path}: {problem}"


def _format_exception(exc: BaseException, type_: Any) -> str:
    """cattrs' wording, plus the reason an attrs validator gave; unknown keys with the known ones."""
    from cattrs.errors import ForbiddenExtraKeysError  # only this path needs it: start-up stays light
    from cattrs.v import format_exception  # only this path needs it: start-up stays light

    if isinstance(exc, ForbiddenExtraKeysError):
        unknown = ", ".join(repr(key) for key in sorted(exc.extra_fields))
        fields = attrs.fields(exc.cl) if attrs.has(exc.cl) else ()
        known = ", ".join(field.name for field in fields if field.metadata.get("from_file", True))
        return f"unknown key {unknown}" + (f" (known keys: {known})" if known else "")
    if type(exc) is ValueError and _FIELD_REASON.match(str(exc)):
        return " ".join(str(exc).split())
    attrs_reason = _ATTRS_REASON.match(str(exc)) if type(exc) is ValueError else None
    if attrs_reason:  # attrs.validators.ge and friends: "'name' must be >= 0: -1"
        return f"{attrs_reason['field']}: {attrs_reason['reason']}"
    if typing.get_origin(type_) is typing.Literal:
        return "must be one of " + ", ".join(repr(choice) for choice in typing.get_args(type_))
    text = format_exception(exc, type_)
    detail = " ".join(str(exc).split())
    if isinstance(exc, ValueError) and detail and detail not in text:
        text = f"{text}: {detail}"
    return text


def _mask(value: Any, key: str = "") -> Any:
    if isinstance(value, Mapping):
        return {k: _mask(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, key) for v in value]
    if isinstance(value, str):
        if _SECRET_KEY.search(key) and value:
            return "***"
        from pao_core.sanitize import mask_url  # its patterns: only `pao config` shows values

        return mask_url(value)
    return value


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    conv.register_structure_hook(Path, lambda value, _: Path(value).expanduser())
    conv.register_unstructure_hook(Path, str)
    return conv


_converter = _make_converter()


def load_config(
    environ: Mapping[str, str] | None = None,
    tables: Iterable[ConfigTable] | None = None,
    *,
    strict_tables: bool | None = None,
) -> PaoConfig:
    """Read the config file (if any), apply environment overrides, validate every table.

    ``tables``: the plugins' declared tables (default: those of the process-wide
    plugins). ``strict_tables``: a table no plugin declares is an error (default:
    when every installed plugin was loaded, none limited or broken).
    """
    env = os.environ if environ is None else environ
    if tables is None:
        from pao_core.plugins import get_plugins  # plugins imports config: looked up on use

        plugins = get_plugins()
        tables = plugins.config_tables()
        strict_tables = plugins.complete if strict_tables is None else strict_tables
    declared = {(table.kind, table.name): table for table in tables}
    path = config_path(env)
    raw: dict[str, Any] = {}
    source: Path | None = None
    if path.exists() or env.get("PAO_CONFIG"):
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{path}: file not found (named by PAO_CONFIG)") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
        source = path
    where = source or path
    for declaration in declared.values():
        for var, key in declaration.env.items():
            if env.get(var):
                section = raw.setdefault(declaration.kind, {})
                if not isinstance(section, dict):
                    raise ConfigError(f"{where}: {declaration.kind}: must be a table")
                section.setdefault(declaration.name, {})[key] = env[var]
    if env.get("PAO_REGISTRY_URL"):
        if not isinstance(raw.setdefault("registry", {}), dict):
            raise ConfigError(f"{where}: registry: must be a table")
        raw["registry"]["url"] = env["PAO_REGISTRY_URL"]
    if "home" in raw:
        raise ConfigError(f"{path}: home: set the state folder with PAO_HOME, not in the file")
    raw["home"] = str(home_path(env))
    raw["source"] = str(source) if source else None
    try:
        config = _converter.structure(raw, PaoConfig)
    except (cattrs.BaseValidationError, ValueError, TypeError) as exc:
        raise ConfigError(_describe(exc, source, CORE_PATH)) from None
    _check_plugin_tables(raw, declared, where, bool(strict_tables))
    return config


def _check_plugin_tables(
    raw: Mapping[str, Any], declared: Mapping[tuple[str, str], ConfigTable], where: Path, strict: bool
) -> None:
    for kind in PLUGIN_TABLES:
        for name, table in (raw.get(kind) or {}).items():
            declaration = declared.get((kind, name))
            if declaration is None:
                if strict:
                    known = sorted(n for k, n in declared if k == kind)
                    raise ConfigError(
                        f"{where}: {kind}.{name}: no installed plugin reads this table "
                        f"(known {kind}: {', '.join(known) or 'none'})"
                    )
                continue
            try:
                _converter.structure(dict(table), declaration.options_class())
            except (cattrs.BaseValidationError, ValueError, TypeError) as exc:
                raise ConfigError(_describe(exc, where, f"{kind}.{name}")) from None
