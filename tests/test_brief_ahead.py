"""``pao brief`` ranks the stores' vectors in a helper forked before pao loads (``pao_ahead``).

As a user runs it (from the plugin index, after a first run): pao's own process never
imports numpy, and the briefing is the one the library composes in one process. At the
library level (a script of its own, since the helper is a fork): the helper answers what an
in-process search answers, one that died costs time only, one that is late costs the vectors
and is reaped, and a configuration that turns semantic search off starts none. The real
model, the real embedded stores.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pao_core.plugins import load_config
from pao_core.gather import brief
from pao_core.plugins import get_plugins

pytestmark = pytest.mark.embeddings

MEMORY = Path(__file__).resolve().parent / "data" / "eval2" / "memory.jsonl"
PARAPHRASE = "the ferry app crashes on old handsets"
CRASH_RELEASE = "obs:ferrypass Play Console#3"
"""Only the vectors find it for PARAPHRASE (plugins/pao_postgres/tests/test_longterm_semantic.py)."""
NOT_ON_THE_BRIEF_PATH = ("numpy", "cattrs.preconf.json", "pao_hosts", "pao_agents.registry", "pao_agents.lifecycle",
                         "pao_tmux", "pao_machines", "pao_monitor",
                         "pao_eval", "psycopg", "libtmux", "requests", "mcp", "pao_historyworker.commands",
                         "pao_postgres.commands", "pao_agents.spec.options", "pao_agents.spec.records",
                         "pao_historyworker.transcripts", "pao_agents.spec.hookspecs", "pao_agents.spec.contracts")
"""Modules whose import a ``pao brief`` process pays for nothing (issue 31: the whole process <= 10x ``python -c
pass``): the vectors' numpy is the helper's, the records' JSON converter is made on first use, no plugin but the
memory stores' and the briefing sections' is loaded (pao-machines' router takes other commands: the plugin index
says which), and of those not the modules of their own commands, nor the agents' hooks, contracts, option tables and records
(added or named only when an agent hook is called), nor the history transcripts' parser (indexing reads transcripts, a
search does not)."""
NOT_IN_THE_HELPER = ("attr", "attrs", "cattrs", "pluggy", "hashlib", "_hashlib", "pao_core.models", "pao_core.config")
"""What the helper never imports, neither before its fork nor for its vectors: each would delay the first vector,
which a ``pao brief`` waits for (issue 31): pao's records and configuration are the parent's, and OpenSSL's hashes
serve only batches' vector cache."""
SQL = "SELECT rowid, vector FROM vectors ORDER BY rowid"
TEXTS = ("The ferry app crashed on Android 8 phones, so the release was halted.",
         "Timetables are cached for offline use on the boat.",
         "Wine pairs well with roast lamb.", "Knit the sweater with a cable pattern.")


WATCHED = ("import atexit, runpy, sys; atexit.register(lambda: print(*sys.modules, sep='\\n', file=sys.stderr)); "
           "runpy.run_module('pao_core', run_name='__main__')")
"""``pao ARGS`` (``python -c WATCHED ARGS``) that lists on stderr every module it imported: ``-X importtime``
misses what ``importlib.import_module`` imports (the plugins the index loads, ``pao_agents.spec``'s names)."""


def brief_json(pao, *args: str) -> tuple[dict, str]:
    pao("-c", WATCHED, "brief", "--help")  # the plugin index of this sys.path (``-c``: '', not ``-m``'s folder)
    done = pao("-c", WATCHED, "brief", "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


@pytest.fixture
def python(pao_config_file: Path):
    """``python ARGS`` with this test's environment (``-m pao_core``: the ``pao`` command, as installed)."""
    del pao_config_file

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                              env={**os.environ, **(env or {})})

    return run


@pytest.mark.hook("pao_ahead")
def test_the_vectors_are_ranked_in_a_helper_and_the_briefing_is_unchanged(python) -> None:
    imported = python("-m", "pao_core", "memory", "import", str(MEMORY))  # the first run writes the plugin index
    assert imported.returncode == 0, imported.stderr

    shown, imports = brief_json(python, PARAPHRASE)

    assert CRASH_RELEASE in [item["id"] for item in shown["items"]], "the vectors' hit is missing"
    imported_modules = set(imports.split())
    needless = [name for name in imported_modules if name.split(".")[0] in NOT_ON_THE_BRIEF_PATH or name in NOT_ON_THE_BRIEF_PATH]
    assert not needless, f"pao's process imported what brief does not need: {sorted(needless)}"
    assert shown["backends"]["longterm"]["status"] == "ok", shown["backends"]
    in_one_process = brief(PARAPHRASE, config=load_config(), plugins=get_plugins())
    assert [(item["id"], item["score"]) for item in shown["items"]] == [
        (item.id, item.score) for item in in_one_process.items]
    assert shown["content_hash"] == in_one_process.content_hash


def test_no_helper_for_help_or_when_the_configuration_turns_semantic_search_off(python, pao_config_file: Path) -> None:
    started = "import sys, pao_embeddings.ahead as ahead, {0}; {0}.before_brief(['brief', 'topic']); print(ahead.running())"
    assert [python("-c", started.format(plugin)).stdout.strip() for plugin in ("pao_postgres", "pao_historyworker")] == [
        "True", "True"]

    helped = "import sys, pao_embeddings.ahead as ahead, pao_postgres; pao_postgres.before_brief(['brief', '--help']); print(ahead.running())"
    assert python("-c", helped).stdout.strip() == "False"

    pao_config_file.write_text("[backends.longterm]\nsemantic = false\n[backends.history]\nurl = 'http://127.0.0.1:9'\n")

    assert [python("-c", started.format(plugin)).stdout.strip() for plugin in ("pao_postgres", "pao_historyworker")] == [
        "False", "False"]
    assert python("-c", started.format("pao_postgres"), env={"PAO_POSTGRES_URL": "postgresql://h/db"}).stdout.strip() == "False"


SCRIPT = textwrap.dedent("""
    import json, os, signal, sys, time
    from pao_embeddings import ahead, similar
    def modules():  # sent to the helper (it runs this script's __main__ too: forked from it)
        return sorted(sys.modules)
    store, case, topic, how = sys.argv[1:]
    ahead.before_brief(["brief", topic], "longterm", "PAO_NO_SUCH_URL")
    pid = ahead._helper.pid
    if case == "dead":
        os.kill(pid, signal.SIGKILL)
    if case == "late":
        os.kill(pid, signal.SIGSTOP)
    def not_here():
        if case == "unreadable":
            import sqlite3
            with sqlite3.connect(store) as conn:
                return conn.execute(%r).fetchall()
        raise AssertionError("the caller's rows were read")
    started = time.monotonic()
    search = similar.nearest if how == "at once" else lambda *args, **kwargs: similar.nearest_soon(*args, **kwargs)()
    found = search(store, "1", not_here, topic, floor=0.0, limit=3, deadline=started + (1.0 if case == "late" else 60),
                   sql="SELECT nothing FROM nowhere" if case == "unreadable" else %r)
    helper_modules = ahead.run(modules, time.monotonic() + 30) if case == "alive" else []
    print(json.dumps({"found": found, "numpy": "numpy" in sys.modules, "helper": ahead.running(), "pid": pid,
                      "seconds": time.monotonic() - started, "helper_modules": helper_modules}))
""" % (SQL, SQL))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    from pao_embeddings.model import shared_encoder

    path = tmp_path / "vectors.sqlite3"
    vectors = shared_encoder().encode(list(TEXTS))
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE vectors (rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL)")
        conn.executemany("INSERT INTO vectors VALUES (?, ?)", [(n, v.tobytes()) for n, v in enumerate(vectors, 1)])
    conn.close()
    return path


def searched(python, store: Path, case: str, how: str) -> dict:
    done = python("-c", SCRIPT, str(store), case, PARAPHRASE, how)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def in_this_process(store: Path) -> list[list[float]]:
    from pao_embeddings import similar

    with sqlite3.connect(store) as conn:
        rows = conn.execute(SQL).fetchall()
    conn.close()
    found = similar.nearest(f"{store}-here", "1", lambda: rows, PARAPHRASE, floor=0.0, limit=3, deadline=None)
    return [list(hit) for hit in found]


@pytest.mark.parametrize("how", ["at once", "soon"])  # similar.nearest, or nearest_soon's thread
def test_the_helper_answers_what_a_search_here_answers(python, store: Path, how: str) -> None:
    answer = searched(python, store, "alive", how)

    assert answer["found"] == in_this_process(store) and answer["found"][0][0] == 1
    assert answer["numpy"] is False and answer["helper"] is True
    assert "numpy" in answer["helper_modules"], "the helper's own modules were not listed"
    needless = sorted(name for name in answer["helper_modules"]
                      if name in NOT_IN_THE_HELPER or name.split(".")[0] in NOT_IN_THE_HELPER)
    assert not needless, f"the helper imported what delays its first vector: {needless}"


@pytest.mark.parametrize("how", ["at once", "soon"])  # similar.nearest, or nearest_soon's thread
def test_a_dead_helper_costs_time_only(python, store: Path, how: str) -> None:
    answer = searched(python, store, "dead", how)

    assert answer["found"] == in_this_process(store)
    assert answer["numpy"] is True and answer["helper"] is False, "the search ran here"


@pytest.mark.parametrize("how", ["at once", "soon"])
def test_a_store_the_helper_cannot_read_is_searched_here(python, store: Path, how: str) -> None:
    answer = searched(python, store, "unreadable", how)

    assert answer["found"] == in_this_process(store)
    assert answer["numpy"] is True, "the search ran here, with the caller's rows"


@pytest.mark.parametrize("how", ["at once", "soon"])  # similar.nearest, or nearest_soon's thread
def test_a_late_helper_costs_the_vectors_and_is_reaped(python, store: Path, how: str) -> None:
    answer = searched(python, store, "late", how)

    assert answer["found"] == []
    assert answer["seconds"] < 30
    with pytest.raises(ProcessLookupError):
        os.kill(answer["pid"], 0)


CLOSED = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from pao_embeddings import ahead
    ahead.before_brief(["brief", "the ferry app"], "longterm", "PAO_NO_SUCH_URL")
    pid = ahead._helper.pid
    if sys.argv[1] == "longterm":
        from pao_postgres.backend import LongtermBackend
        from pao_postgres.options import LongtermOptions
        backend = LongtermBackend("longterm", LongtermOptions(), Path(sys.argv[2]))
    else:
        from pao_historyworker.backend import HistoryBackend
        from pao_historyworker.options import HistoryOptions
        backend = HistoryBackend(HistoryOptions(), Path(sys.argv[2]))
    backend.close()
    waited = time.monotonic() + 10
    while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < waited:  # gone at once, not at exit
        time.sleep(0.01)
    print(time.monotonic() < waited)
    ahead.end()  # what pao's exit does: the helper is reaped already
""")


@pytest.mark.parametrize("store", ["longterm", "history"])
def test_closing_a_store_ends_the_helper_before_pao_exits(python, tmp_path: Path, store: str) -> None:
    done = python("-c", CLOSED, store, str(tmp_path))

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True", "the helper outlived the stores' close step"
