"""pao plugin: Terminal driver: macOS Terminal.app (appscript)."""
