"""A tiny real terminal program that behaves like a coding-agent CLI, for lifecycle tests.

It runs in a real tmux pane: turns on bracketed paste, draws a transcript, an input
line between two rules (``❯`` + NO-BREAK SPACE, like Claude Code) and a footer; reads
raw keys and bracketed pastes; shows long pastes as ``[Pasted text #N +L lines]``;
submits on Enter (CR), shows ``esc to interrupt`` while "working", and appends every
submission to ``.fake-agent/received.jsonl`` in its folder, with the session id.

Behaviour knobs come from the environment (which also proves pao passed it):
FAKE_AGENT_START_DELAY (seconds of a blank "starting" screen), FAKE_AGENT_DIALOG=1
(a trust dialog that never goes away), FAKE_AGENT_EXIT=<message> (print and exit 3),
FAKE_AGENT_BUSY (seconds of work per message), FAKE_AGENT_SWALLOW_ENTER=N (ignore the
first N Enter presses), FAKE_AGENT_SWALLOW_BUSY_ENTER=N (ignore N presses while busy), FAKE_AGENT_ECHO_ENV=NAME (show that variable on screen), FAKE_AGENT_STAMPS=<file>
(write the wall-clock times the program started and first drew its ready screen,
for the benchmarks).
"""

from __future__ import annotations

import time

STARTED = time.time()  # the program's first line: its own imports count as its start-up, not pao's

import json  # noqa: E402
import os  # noqa: E402
import select  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import termios  # noqa: E402
import tty  # noqa: E402
import uuid  # noqa: E402

NBSP = "\u00a0"
PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"
STATE_DIR = ".fake-agent"


class FakeAgent:
    def __init__(self, session: str, resumed: bool) -> None:
        self.session = session
        self.transcript: list[str] = [f"fake-agent session {session}{' (resumed)' if resumed else ''}"]
        self.input = ""
        self.pastes: dict[str, str] = {}
        self.busy_until = 0.0
        self.busy_started = 0.0
        self.swallow_busy = int(os.environ.get("FAKE_AGENT_SWALLOW_BUSY_ENTER", "0"))
        self.swallow = int(os.environ.get("FAKE_AGENT_SWALLOW_ENTER", "0"))
        self.busy_for = float(os.environ.get("FAKE_AGENT_BUSY", "0.3"))
        os.makedirs(os.path.join(STATE_DIR, "sessions"), exist_ok=True)
        self.session_file = os.path.join(STATE_DIR, "sessions", f"{session}.jsonl")
        if resumed and os.path.exists(self.session_file):
            with open(self.session_file, encoding="utf-8") as handle:
                for line in handle:
                    self.transcript.append("> " + json.loads(line)["text"].splitlines()[0])
        echo = os.environ.get("FAKE_AGENT_ECHO_ENV")
        if echo:
            self.transcript.append(f"{echo}={os.environ.get(echo, '')}")

    def draw(self) -> None:
        width = max(20, shutil.get_terminal_size().columns)
        lines = list(self.transcript[-30:])
        now = time.monotonic()
        if now < self.busy_until:  # a live timer, like real agents: the screen keeps changing
            lines.append(f"✻ Working… ({now - self.busy_started:.1f}s · esc to interrupt)")
        lines += ["─" * width, f"❯{NBSP}{self.input}", "─" * width, "  ? for shortcuts"]
        sys.stdout.write("\x1b[H\x1b[2J" + "\r\n".join(lines))
        sys.stdout.flush()

    def paste(self, text: str) -> None:
        if len(text) > 200 or text.count("\n") > 1:
            key = f"[Pasted text #{len(self.pastes) + 1} +{text.count(chr(10)) + 1} lines]"
            self.pastes[key] = text
            self.input += key
        else:
            self.input += text

    def submit(self) -> None:
        if self.swallow_busy > 0 and time.monotonic() < self.busy_until:
            self.swallow_busy -= 1
            return
        if self.swallow > 0:
            self.swallow -= 1
            return
        if not self.input:
            return
        text = self.input
        for key, value in self.pastes.items():
            text = text.replace(key, value)
        self.transcript.append("> " + self.input)
        self.input, self.pastes = "", {}
        entry = {"text": text, "session": self.session, "time": time.time()}
        for path in (os.path.join(STATE_DIR, "received.jsonl"), self.session_file):
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry) + "\n")
        self.busy_started = time.monotonic()
        self.busy_until = self.busy_started + self.busy_for
        self.transcript.append(f"● received {len(text)} characters")

    def feed(self, data: bytes, buffer: bytearray) -> None:
        buffer.extend(data)
        while buffer:
            if buffer.startswith(PASTE_START):
                end = buffer.find(PASTE_END)
                if end < 0:
                    return  # the rest of the paste is still coming
                self.paste(buffer[len(PASTE_START) : end].decode("utf-8", "replace").replace("\r", "\n"))
                del buffer[: end + len(PASTE_END)]
            elif buffer[0] == 0x1B:
                if len(buffer) < len(PASTE_START) and PASTE_START.startswith(bytes(buffer)):
                    return
                del buffer[:1]  # other escape sequences: ignored
            elif buffer[0] == 0x0D:
                del buffer[:1]
                self.submit()
            elif buffer[0] == 0x7F:
                del buffer[:1]
                self.input = self.input[:-1]
            elif buffer[0] == 0x03:
                raise KeyboardInterrupt
            else:
                char_len = _utf8_length(buffer[0])
                if len(buffer) < char_len:
                    return
                self.input += buffer[:char_len].decode("utf-8", "replace")
                del buffer[:char_len]

    def run(self, started: float) -> None:
        buffer = bytearray()
        self.draw()
        drawn_at = time.monotonic()
        stamps = os.environ.get("FAKE_AGENT_STAMPS")
        if stamps:
            with open(stamps, "w", encoding="utf-8") as handle:
                json.dump({"start": started, "ready": time.time()}, handle)
        while True:
            ready, _, _ = select.select([sys.stdin.fileno()], [], [], 0.05)
            now = time.monotonic()
            if ready:
                data = os.read(sys.stdin.fileno(), 65536)
                if not data:
                    return
                self.feed(data, buffer)
            elif not (now - 0.2 > drawn_at and now < self.busy_until + 0.5):
                continue  # nothing new to show
            self.draw()
            drawn_at = now


def _utf8_length(first: int) -> int:
    return 4 if first >= 0xF0 else 3 if first >= 0xE0 else 2 if first >= 0xC0 else 1


def main(argv: list[str]) -> int:
    started = STARTED
    resumed = len(argv) >= 2 and argv[0] == "--resume"
    session = argv[1] if resumed else str(uuid.uuid4())
    sys.stdout.write("starting fake agent…\r\n")
    sys.stdout.flush()
    time.sleep(float(os.environ.get("FAKE_AGENT_START_DELAY", "0")))
    if os.environ.get("FAKE_AGENT_EXIT"):
        print(os.environ["FAKE_AGENT_EXIT"], flush=True)
        return 3
    if os.environ.get("FAKE_AGENT_DIALOG"):
        sys.stdout.write("Do you trust the files in this folder?\r\n❯ 1. Yes, proceed\r\n  2. No, exit\r\n")
        sys.stdout.flush()
        time.sleep(3600)
        return 1
    old = termios.tcgetattr(sys.stdin.fileno())
    tty.setraw(sys.stdin.fileno())
    sys.stdout.write("\x1b[?2004h")
    try:
        FakeAgent(session, resumed).run(started)
    except KeyboardInterrupt:
        return 130
    finally:
        sys.stdout.write("\x1b[?2004l")
        termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, old)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
