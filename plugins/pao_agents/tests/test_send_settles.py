"""``send_text`` presses the submit key only once the pasted text's screen has settled. A terminal UI draws a paste
over several frames (here: its footer 60 ms later), and Gemini CLI reads an Enter close behind a paste as a newline
in its input; pressed at once, the Enter became a newline and the late footer looked like the text moving up, so a
task that was never submitted counted as taken. Real tmux on a private socket; in the pane a small terminal program
with bracketed paste that behaves that way and records what it was really given."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

from pao_agents.conversation import send_text
from pao_agents.readiness import ScreenReader, wait_for

PROGRAM = textwrap.dedent(r'''
    import os, select, sys, termios, time, tty
    submitted_file = sys.argv[1]
    tty.setraw(0)
    history, typed, newlines, footer_at, pasted_at, footer = [], "", 0, None, None, False
    def draw():
        lines = [*history, "> " + typed] + [">"] * newlines + (["workspace footer ~/second no sandbox"] if footer else [])
        os.write(1, ("\x1b[2J\x1b[H" + "\r\n".join(lines)).encode())
    os.write(1, b"\x1b[?2004h")
    draw()
    buffer = b""
    while True:
        wait = None if footer_at is None else max(0.0, footer_at - time.monotonic())
        if not select.select([0], [], [], wait)[0]:
            footer, footer_at = True, None
            draw()
            continue
        buffer += os.read(0, 65536)
        if b"\x1b[200~" in buffer and b"\x1b[201~" in buffer:
            start, end = buffer.index(b"\x1b[200~"), buffer.index(b"\x1b[201~")
            typed += buffer[start + 6:end].decode()
            buffer = buffer[end + 6:]
            pasted_at, footer_at, footer = time.monotonic(), time.monotonic() + 0.06, False
            draw()
        while b"\r" in buffer and b"\x1b[200~" not in buffer:
            buffer = buffer[buffer.index(b"\r") + 1:]
            if pasted_at is not None and time.monotonic() - pasted_at < 0.08:
                newlines += 1  # an Enter close behind a paste: a newline in the input, as Gemini CLI reads it
            else:
                with open(submitted_file, "a") as stream:
                    stream.write(typed + "\n")
                history += ["you: " + typed, "working on it"]
                typed, newlines = "", 0
            draw()
''')

TASK = "Your task: LOOK-IT-UP for the billing exporter. Your briefing from pao is CONTEXT_BRIEFING.md; use it."


def test_the_key_is_pressed_once_the_paste_has_settled_so_the_task_is_really_submitted(tmp_path: Path) -> None:
    from pao_tmux.driver import TmuxDriver, TmuxOptions

    program, submitted = tmp_path / "tui.py", tmp_path / "submitted"
    program.write_text(PROGRAM)
    socket = f"pao-settle-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    driver = TmuxDriver(TmuxOptions(socket=socket))
    target = driver.spawn("tui", str(tmp_path), [sys.executable, str(program), str(submitted)], dict(os.environ))
    try:
        reader = ScreenReader.for_host("tui", [])
        assert wait_for(driver, target, lambda screen: screen.startswith(">"), 10) is not None, "the program never drew"
        for attempt in range(3):
            send_text(driver, target, f"{TASK} ({attempt})", submit_key="Enter", reader=reader, name="tui")
            assert submitted.exists(), f"send {attempt} counted as taken, but the program was never given it"
            assert submitted.read_text().splitlines()[-1] == f"{TASK} ({attempt})"
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
