"""pao-monitor: the interactive `pao monitor` (Textual), kept off every other command's start-up."""
