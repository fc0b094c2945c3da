"""pao-machines: agents on other machines, reached over the system's OpenSSH client (docs/machines.md)."""
