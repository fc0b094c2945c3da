"""The shell line Terminal.app types into a new tab to start the agent.

``do script`` types the line into the tab's interactive login shell (zsh, bash or sh),
where it shows on screen and lands in the shell's history. So the line carries paths
only: ``cd -- FOLDER && exec PYTHON -I -S LAUNCHER SPEC``. The agent's command and
environment (API keys) wait in the private spec file that pao's launcher reads and
deletes (:mod:`pao_agents.launch`). Every word is quoted with :func:`shlex.quote`, and
control characters are refused: a newline or tab would be typed as a key (submitting
early, or completing).
"""

from __future__ import annotations

import shlex
import unicodedata

from pao_agents.spec import launcher_argv
from pao_core.errors import ValidationError


def launch_line(folder: str, spec_path: str) -> str:
    """``cd -- FOLDER && exec PYTHON -I -S LAUNCHER SPEC``, every word shell-quoted.

    ``cd`` stays in the shell, so a missing folder is reported there and the agent never starts.
    """
    launcher = launcher_argv(spec_path)
    python, *_, script, spec = launcher
    typed = {"folder": folder, "Python interpreter path": python, "launcher path": script, "launch file path": spec}
    for what, text in typed.items():
        _refuse_control(what, text)
    return f"cd -- {shlex.quote(folder)} && exec {shlex.join(launcher)}"


def _refuse_control(what: str, text: str) -> None:
    for char in text:
        if unicodedata.category(char) == "Cc":
            raise ValidationError(
                f"the {what} contains a control character ({char!r}) that Terminal.app would type as a key: {text!r}"
            )
