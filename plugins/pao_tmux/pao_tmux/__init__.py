"""pao plugin: Terminal driver: tmux (libtmux)."""
