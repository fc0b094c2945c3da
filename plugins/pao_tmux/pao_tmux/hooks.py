"""Hook implementations of pao-tmux. Imports nothing heavy until used."""

from __future__ import annotations
