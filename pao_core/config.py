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
from cattrs.cols import homogenous_tuple_structure_factory

from pao_core.errors import ConfigError
from pao_core.paths import config_path, home_path
from pao_core.tables import PLUGIN_TABLES, ConfigTable

T = TypeVar("T")

SHARE = attrs.validators.and_(attrs.validators.ge(0), attrs.validators.le(1))
"""attrs validator: a share between 0 and 1 (attrs' own, as for every bound: "'name' must be <= 1: 1.5")."""

_SECRET_KEY = re.compile(r"(password|secret|token|api_?key|auth|webhook$)", re.IGNORECASE)
"""Keys whose values `pao config` never shows ([notify] webhook: its path or topic is the secret)."""


MIN_BUDGET_CHARS = 400
"""Room for the briefing's header and footer; a smaller budget is a configuration error."""


@attrs.frozen
class GatherOptions:
    deadline: float = attrs.field(default=2.0, validator=attrs.validators.gt(0))
    limit: int = attrs.field(default=20, validator=attrs.validators.ge(1))


@attrs.frozen
class BriefingOptions:
    """``[briefing]``: the file's name, its size budget and how fusion ranks and cuts.

    ``floors`` maps a backend name to the lowest native score kept from it;
    ``relative_floor`` drops items below that share of their backend's best score.
    """

    budget_chars: int = attrs.field(default=6000, validator=attrs.validators.ge(MIN_BUDGET_CHARS))
    filename: str = "CONTEXT_BRIEFING.md"
    max_items: int = attrs.field(default=12, validator=attrs.validators.ge(1))
    item_chars: int = attrs.field(default=600, validator=attrs.validators.ge(1))
    rrf_k: int = attrs.field(default=60, validator=attrs.validators.ge(0))
    floors: Mapping[str, float] = attrs.field(factory=dict)
    relative_floor: float = attrs.field(default=0.0, validator=SHARE)
    duplicate_similarity: float = attrs.field(default=0.5, validator=SHARE)
    agent_items: int = attrs.field(default=3, validator=attrs.validators.ge(0))  # facts agents wrote, per briefing


@attrs.frozen
class PaoConfig:
    """The effective configuration of one ``pao`` run."""

    home: Path = attrs.field(metadata={"from_file": False})
    source: Path | None = attrs.field(default=None, metadata={"from_file": False})
    gather: GatherOptions = GatherOptions()
    briefing: BriefingOptions = BriefingOptions()
    backends: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    terminals: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    hosts: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    machines: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    """``[machines.NAME]``: other machines agents run on (read by pao-machines, docs/machines.md)."""
    trust: Mapping[str, Any] = attrs.field(factory=dict)
    """``[trust]``: folders the user trusts (read by pao-agents, ``options("trust", "", ...)``; docs/security.md)."""
    tables: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict, metadata={"from_file": False})
    """The other top-level tables, each a plugin's (``[spawn]``: pao-agents'), declared as ``ConfigTable(kind, "")``."""

    def options(self, table: str, name: str, cls: type[T]) -> T:
        """Structure the plugin table ``[table.name]`` (``name`` empty: the table ``[table]``) into ``cls``.

        Raises :class:`ConfigError` naming the file, the key and what is wrong.
        """
        if name:
            raw = getattr(self, table).get(name, {})
        else:  # "": the whole table, a core field or a plugin's top-level table
            raw = getattr(self, table) if table in _CORE_TABLES else self.tables.get(table, {})
        return _structure(dict(raw), cls, self.source, f"{table}.{name}" if name else table)

    def masked(self) -> dict[str, Any]:
        """The configuration as plain data with passwords and tokens masked."""
        data = _converter.unstructure(self)
        tables = data.pop("tables")
        return _mask({**data, **tables})


def _structure(raw: Any, cls: type[T], source: Path | None, prefix: str) -> T:
    """``raw`` as ``cls``, or a :class:`ConfigError` naming ``source``, each wrong key under ``prefix`` and why."""
    try:
        return _converter.structure(raw, cls)
    except (cattrs.BaseValidationError, ValueError, TypeError) as exc:
        where = str(source) if source else "configuration"
        if isinstance(exc, cattrs.BaseValidationError):
            messages = cattrs.transform_error(exc, path=prefix, format_exception=_format_exception)
            raise ConfigError(f"{where}: " + "; ".join(_key_first(message) for message in messages)) from None
        raise ConfigError(f"{where}: {prefix}: {exc}") from None


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
    if isinstance(exc, _NotTheType) or type(exc) is ValueError and _FIELD_REASON.match(str(exc)):
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
    _strict_scalars(conv)
    conv.register_structure_hook_factory(lambda type_: typing.get_args(type_)[1:] == (...,), _strict_list)
    return conv


class _NotTheType(ValueError):
    """A TOML value of the wrong type (a quoted boolean or number): its message is the whole reason."""


def _strict_scalars(conv: cattrs.Converter) -> None:
    """TOML has booleans and numbers: ``desktop = "no"`` or ``limit = "5"`` is a mistake to name, not a value
    to guess (cattrs' default ``bool("no")`` is true). Environment overrides only set text keys."""
    for kind, takes, says in ((bool, (bool,), "a boolean (true or false"), (int, (int,), "an integer (a whole number"),
                              (float, (int, float), "a float (a number")):
        def strict(value: Any, _: type, kind: type = kind, takes: tuple = takes, says: str = says) -> Any:
            if isinstance(value, takes) and (kind is bool or not isinstance(value, bool)):
                return kind(value)
            raise _NotTheType(f"must be {says}, unquoted), not {value!r}")

        conv.register_structure_hook(kind, strict)


def _strict_list(type_: Any, conv: cattrs.Converter) -> Any:
    """One string where a list belongs (``command = "notify-send"``) is refused: cattrs would read it letter by letter."""
    items = homogenous_tuple_structure_factory(type_, conv)

    def strict(value: Any, _: type) -> Any:
        if isinstance(value, (str, Mapping)):
            raise _NotTheType(f"must be a list ([...]), not {value!r}")
        return items(value, type_)
    return strict


_converter = _make_converter()
_CORE_TABLES = frozenset(field.name for field in attrs.fields(PaoConfig))


def read_config(
    environ: Mapping[str, str] | None = None, tables: Iterable[ConfigTable] = (), *, strict_tables: bool = False
) -> PaoConfig:
    """Read the config file (if any), apply environment overrides, validate every table.

    ``tables``: the plugins' declared tables (``pao_core.plugins.load_config`` passes the
    process-wide plugins'). ``strict_tables``: a table none of them declares is an error.
    """
    env = os.environ if environ is None else environ
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
    raw["tables"] = {key: raw.pop(key) for key in list(raw) if key not in _CORE_TABLES}
    for declaration in declared.values():
        for var, key in declaration.env.items():
            if env.get(var):
                holder = raw if declaration.name else raw["tables"]
                section = holder.setdefault(declaration.kind, {})
                if not isinstance(section, dict):
                    raise ConfigError(f"{where}: {declaration.kind}: must be a table")
                (section.setdefault(declaration.name, {}) if declaration.name else section)[key] = env[var]
    if "home" in raw:
        raise ConfigError(f"{path}: home: set the state folder with PAO_HOME, not in the file")
    raw["home"] = str(home_path(env))
    raw["source"] = str(source) if source else None
    config = _structure(raw, PaoConfig, source, CORE_PATH)
    _check_plugin_tables(raw, declared, where, bool(strict_tables))
    return config


def _check_plugin_tables(
    raw: Mapping[str, Any], declared: Mapping[tuple[str, str], ConfigTable], where: Path, strict: bool
) -> None:
    found = [(kind, "", table) for kind, table in raw["tables"].items()]
    found += [(kind, name, table) for kind in PLUGIN_TABLES for name, table in (raw.get(kind) or {}).items()]
    for kind, name, table in found:
        declaration = declared.get((kind, name))
        if declaration is None:
            if strict and name:
                known = sorted(n for k, n in declared if k == kind)
                raise ConfigError(f"{where}: {kind}.{name}: no installed plugin reads this table "
                                  f"(known {kind}: {', '.join(known) or 'none'})")
            if strict:
                known = sorted({*_CORE_TABLES, *(k for k, n in declared if not n)} - {"home", "source", "tables"})
                raise ConfigError(f"{where}: unknown key {kind!r} (known keys: {', '.join(known)})")
            continue
        _structure(dict(table), declaration.options_class(), where, f"{kind}.{name}" if name else kind)
