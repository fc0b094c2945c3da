"""Hook implementations of pao-postgres. Imports nothing heavy until used."""

from __future__ import annotations
