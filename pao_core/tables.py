"""The configuration tables plugins declare (``pao_config_tables``); :mod:`pao_core.config` reads and checks them."""

from __future__ import annotations

from typing import Mapping

import attrs

from pao_core.plugin_index import load_object

PLUGIN_TABLES = ("backends", "terminals", "hosts")
"""The top-level tables whose sub-tables belong to plugins."""


@attrs.frozen
class ConfigTable:
    """A plugin's table ``[kind.name]`` (``name`` empty: its own top-level table ``[kind]``), returned by
    the ``pao_config_tables`` hook.

    ``options`` is the attrs class the table is structured into, or ``"module:Class"``
    (imported only when the table is present, so declaring costs nothing at start-up).
    ``env`` maps an environment variable to the key of the table it overrides.
    """

    kind: str
    name: str = attrs.field()
    options: type | str
    env: Mapping[str, str] = attrs.field(factory=dict)

    @name.validator
    def _named_in_a_plugin_table(self, attribute: attrs.Attribute, value: str) -> None:
        if bool(value) != (self.kind in PLUGIN_TABLES):
            raise ValueError(f"kind {self.kind!r}: a table of {', '.join(PLUGIN_TABLES)} has a name, a top-level one none")

    def options_class(self) -> type:
        return load_object(self.options) if isinstance(self.options, str) else self.options
