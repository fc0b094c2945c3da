"""Hook implementations of pao-historyworker. Imports nothing heavy until used."""

from __future__ import annotations
