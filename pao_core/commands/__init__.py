"""pao's own commands, each module a default plugin implementing ``pao_add_commands``."""
