"""Hook implementations of pao-terminalapp. Imports nothing heavy until used."""

from __future__ import annotations
