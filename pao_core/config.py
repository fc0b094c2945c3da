"""Configuration: one TOML file, environment overrides, cattrs-structured.

The file is ``$PAO_CONFIG`` or ``config.toml`` in the platform's config folder; all
state lives under ``$PAO_HOME`` (default: the platform's data folder). Core options
are typed here; each plugin's options live in a table of its own
(``[backends.NAME]``, ``[terminals.NAME]``, ``[hosts.NAME]``) that the plugin
structures with :meth:`PaoConfig.options`.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Mapping, TypeVar

import attrs
import cattrs

from pao_core.errors import ConfigError
from pao_core.sanitize import mask_url

T = TypeVar("T")

ENV_OVERRIDES: dict[str, tuple[str, str, str]] = {
    "PAO_POSTGRES_URL": ("backends", "longterm", "url"),
    "PAO_HISTORY_URL": ("backends", "history", "url"),
    "PAO_CLAUDE_COMMAND": ("hosts", "claude-code", "command"),
    "PAO_CODEX_COMMAND": ("hosts", "codex", "command"),
    "PAO_GEMINI_COMMAND": ("hosts", "gemini", "command"),
    "PAO_TMUX_SOCKET": ("terminals", "tmux", "socket"),
}
"""Environment variable -> (table, name, key) it overrides."""

_SECRET_KEY = re.compile(r"(password|secret|token|api_?key|auth)", re.IGNORECASE)


@attrs.frozen
class GatherOptions:
    deadline: float = 2.0
    limit: int = 20


MIN_BUDGET_CHARS = 400
"""Room for the briefing's header and footer; a smaller budget is a configuration error."""


@attrs.frozen
class BriefingOptions:
    """``[briefing]``: the file's name, its size budget and how fusion ranks and cuts.

    ``floors`` maps a backend name to the lowest native score kept from it;
    ``relative_floor`` drops items below that share of their backend's best score.
    """

    budget_chars: int = 6000
    filename: str = "CONTEXT_BRIEFING.md"
    max_items: int = 12
    item_chars: int = 600
    rrf_k: int = 60
    floors: Mapping[str, float] = attrs.field(factory=dict)
    relative_floor: float = 0.0
    duplicate_similarity: float = 0.5


@attrs.frozen
class SpawnOptions:
    host: str = "claude-code"
    terminal: str = "tmux"
    nudge: bool = True
    ready_timeout: float = 45.0


@attrs.frozen
class PaoConfig:
    """The effective configuration of one ``pao`` run."""

    home: Path
    source: Path | None = None
    gather: GatherOptions = GatherOptions()
    briefing: BriefingOptions = BriefingOptions()
    spawn: SpawnOptions = SpawnOptions()
    backends: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    terminals: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    hosts: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)

    def options(self, table: str, name: str, cls: type[T]) -> T:
        """Structure the plugin table ``[table.name]`` into ``cls``.

        Raises :class:`ConfigError` naming the file, the key and what is wrong.
        """
        raw = getattr(self, table).get(name, {})
        try:
            return _converter.structure(dict(raw), cls)
        except (cattrs.BaseValidationError, ValueError, TypeError) as exc:
            raise ConfigError(_describe(exc, self.source, f"{table}.{name}")) from None

    def masked(self) -> dict[str, Any]:
        """The configuration as plain data with passwords and tokens masked."""
        return _mask(_converter.unstructure(self))


def _describe(exc: Exception, source: Path | None, prefix: str) -> str:
    where = str(source) if source else "configuration"
    if isinstance(exc, cattrs.BaseValidationError):
        messages = cattrs.transform_error(exc, path=prefix, format_exception=_format_exception)
        return f"{where}: " + "; ".join(messages)
    return f"{where}: {prefix}: {exc}"


def _format_exception(exc: BaseException, type_: Any) -> str:
    """cattrs' wording, plus the reason an attrs validator gave (it names the field)."""
    from cattrs.v import format_exception

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
        return mask_url(value)
    return value


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    conv.register_structure_hook(Path, lambda value, _: Path(value).expanduser())
    conv.register_unstructure_hook(Path, str)
    return conv


_converter = _make_converter()


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the configuration file is read from."""
    env = os.environ if environ is None else environ
    if env.get("PAO_CONFIG"):
        return Path(env["PAO_CONFIG"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("pao")) / "config.toml"


def home_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where pao keeps its state (registry, embedded stores, logs)."""
    env = os.environ if environ is None else environ
    if env.get("PAO_HOME"):
        return Path(env["PAO_HOME"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("pao"))


def load_config(environ: Mapping[str, str] | None = None) -> PaoConfig:
    """Read the config file (if any), apply environment overrides, validate."""
    env = os.environ if environ is None else environ
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
    for var, (table, name, key) in ENV_OVERRIDES.items():
        if env.get(var):
            section = raw.setdefault(table, {})
            if not isinstance(section, dict):
                raise ConfigError(f"{path}: {table}: must be a table")
            section.setdefault(name, {})[key] = env[var]
    if "home" in raw:
        raise ConfigError(f"{path}: home: set the state folder with PAO_HOME, not in the file")
    raw["home"] = str(home_path(env))
    raw["source"] = str(source) if source else None
    try:
        config = _converter.structure(raw, PaoConfig)
    except (cattrs.BaseValidationError, ValueError, TypeError) as exc:
        raise ConfigError(_describe(exc, source, "config")) from None
    if config.briefing.budget_chars < MIN_BUDGET_CHARS:
        raise ConfigError(f"{source or path}: briefing.budget_chars: must be at least {MIN_BUDGET_CHARS}")
    return config
