from pao_core.cli import run

run()
