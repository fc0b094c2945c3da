"""The plugin host: entry-point discovery, default plugins, blocking, failure isolation."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pluggy
import pytest

from pao_core import hookimpl
from pao_core.contracts import MemoryBackend
from pao_core.plugins import DEFAULT_PLUGINS, build_plugins, get_plugins
from pao_testing.installed import install_module_plugin, pip_install_target

ROOT = Path(__file__).resolve().parents[1]
NOTES_EXAMPLE = ROOT / "docs" / "examples" / "pao-notes"


@pytest.fixture(scope="session")
def installed_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site folder holding two real distributions: the docs' pao-notes tutorial plugin and a broken one."""
    site = tmp_path_factory.mktemp("site")
    # built from a copy: an in-tree build leaves pao_notes.egg-info in docs/examples, where pao_with_notes.py
    # imports the example from, and every later run there would see the plugin installed twice
    notes = tmp_path_factory.mktemp("notes-src") / "pao-notes"
    shutil.copytree(NOTES_EXAMPLE, notes, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    pip_install_target(notes, site)
    install_module_plugin(tmp_path_factory.mktemp("broken-src"), site, "broken",
                          "raise RuntimeError('this plugin is broken on purpose')\n")
    return site


def with_site(site: Path, **extra: str) -> dict[str, str]:
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")]))}
    env.update(extra)
    return env


@pytest.mark.hook("pao_memory_backends")
def test_external_plugin_found_through_its_entry_point(installed_site: Path, pao, tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("- the staging database password rotates monthly\n- sourdough starter lives in the fridge\n")
    config = tmp_path / "config.toml"
    config.write_text(f'[backends.notes]\npath = "{notes}"\n')
    listing = pao("plugins", "--json", env=with_site(installed_site, PAO_CONFIG=str(config)))
    assert listing.returncode == 0, listing.stderr
    rows = {row["name"]: row for row in json.loads(listing.stdout)["plugins"]}
    assert rows["notes"]["distribution"] == "pao-notes"
    assert rows["notes"]["version"] == "0.1.0"
    assert rows["notes"]["hooks"] == ["pao_memory_backends"]

    result = pao("brief", "where does the sourdough starter live", "--json",
                 env=with_site(installed_site, PAO_CONFIG=str(config)))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["backends"]["notes"]["status"] == "ok"
    assert any("starter lives in the fridge" in item["text"] for item in data["items"])


def test_broken_plugin_is_reported_and_the_rest_load(installed_site: Path, pao) -> None:
    listing = pao("plugins", "--json", env=with_site(installed_site))
    assert listing.returncode == 0, listing.stderr
    report = json.loads(listing.stdout)
    failures = {f["plugin"]: f for f in report["failures"]}
    assert failures["broken"]["stage"] == "load"
    assert "broken on purpose" in failures["broken"]["error"]
    names = {row["name"] for row in report["plugins"]}
    assert "notes" in names and "broken" not in names
    assert set(DEFAULT_PLUGINS) <= names


def test_load_plugins_limits_and_disable_blocks(installed_site: Path, pao) -> None:
    only_notes = json.loads(pao("plugins", "--json", env=with_site(installed_site, PAO_LOAD_PLUGINS="pao-notes")).stdout)
    names = {row["name"] for row in only_notes["plugins"]}
    assert "notes" in names and only_notes["failures"] == []
    assert not names - set(DEFAULT_PLUGINS) - {"notes"}

    none = json.loads(pao("plugins", "--json", env=with_site(installed_site, PAO_LOAD_PLUGINS="")).stdout)
    assert {row["name"] for row in none["plugins"]} == set(DEFAULT_PLUGINS)

    disabled = json.loads(pao("plugins", "--json",
                              env=with_site(installed_site, PAO_DISABLE_PLUGINS="pao-notes,broken")).stdout)
    assert not {"notes", "broken"} & {row["name"] for row in disabled["plugins"]}
    assert disabled["failures"] == []


def test_plugin_is_loaded_once_per_process() -> None:
    assert get_plugins() is get_plugins()


class Exploding:
    @hookimpl
    def pao_memory_backends(self, config):
        raise ValueError("backend factory exploded")


class Fine(MemoryBackend):
    name = "fine"

    @hookimpl
    def pao_memory_backends(self, config):
        return [self]

    def search(self, query, limit, deadline):
        return []

    def health(self, deadline):
        return "fine"


def test_a_failing_hook_is_recorded_and_others_still_answer() -> None:
    from pao_core.plugins import load_config

    plugins = build_plugins({"PAO_LOAD_PLUGINS": ""})
    exploding, fine = Exploding(), Fine()
    plugins.manager.register(exploding, name="exploding")
    plugins.manager.register(fine, name="fine")
    try:
        backends = plugins.memory_backends(load_config())
        assert backends == [fine]
        assert [(f.plugin, f.stage) for f in plugins.failures] == [("exploding", "pao_memory_backends")]
        assert "backend factory exploded" in plugins.failures[0].error
    finally:
        plugins.manager.unregister(exploding)
        plugins.manager.unregister(fine)


class Extra(Fine):
    name = "extra"


class Wrapping:
    """A ``wrapper=True`` implementation: sees every other implementation's results and adds one."""

    @hookimpl(wrapper=True)
    def pao_memory_backends(self, config):
        results = yield
        return [*results, [Extra()]]


class BrokenWrappers:
    @hookimpl(wrapper=True)
    def pao_memory_backends(self, config):
        raise RuntimeError("wrapper failed before its yield")
        yield  # pragma: no cover - makes this a generator

    @hookimpl(wrapper=True, tryfirst=True)
    def pao_briefing_sections(self, config):
        yield
        raise RuntimeError("wrapper failed after its yield")


class NotABackend:
    @hookimpl
    def pao_memory_backends(self, config):
        return ["a string, not a backend", Fine()]


def _plugins_with(*named: tuple[str, object]):
    plugins = build_plugins({"PAO_LOAD_PLUGINS": ""})
    for name, plugin in named:
        plugins.manager.register(plugin, name=name)
    return plugins


def test_a_wrapper_hook_sees_and_changes_the_results_as_pluggy_documents() -> None:
    from pao_core.plugins import load_config

    fine = Fine()
    plugins = _plugins_with(("fine", fine), ("wrapping", Wrapping()))
    backends = plugins.memory_backends(load_config())
    assert [type(b) for b in backends] == [Fine, Extra] and backends[0] is fine
    assert plugins.failures == []


def test_a_failing_wrapper_is_recorded_and_leaves_the_results_as_they_were() -> None:
    from pao_core.plugins import load_config

    fine = Fine()
    plugins = _plugins_with(("fine", fine), ("broken-wrappers", BrokenWrappers()))
    assert plugins.memory_backends(load_config()) == [fine]
    keys = [section.key for section in plugins.briefing_sections(load_config())]
    assert keys == ["topic", "self-priming", "facts", "conversations"]
    assert [(f.plugin, f.stage, f.error) for f in plugins.failures] == [
        ("broken-wrappers", "pao_memory_backends", "wrapper failed before its yield"),
        ("broken-wrappers", "pao_briefing_sections", "wrapper failed after its yield"),
    ]


def test_what_is_not_the_contract_is_recorded_and_dropped() -> None:
    from pao_core.plugins import load_config

    plugins = _plugins_with(("not-a-backend", NotABackend()))
    assert [type(b) for b in plugins.memory_backends(load_config())] == [Fine]
    assert [(f.plugin, f.error) for f in plugins.failures] == [
        ("not-a-backend", "returned a str, not a pao_core.contracts.MemoryBackend")]


class PickSpec:
    @pluggy.HookspecMarker("pao")(firstresult=True)
    def pao_pick(self, value):
        """A firstresult hook of the test's own."""


def _picker(answer, *, fail=False, **options):
    class Picker:
        @hookimpl(**options)
        def pao_pick(self, value):
            if fail:
                raise ValueError(f"picker {answer} failed")
            return None if answer is None else f"{answer}:{value}"

    return Picker()


def test_a_firstresult_hook_stops_at_the_first_answer_in_pluggy_order() -> None:
    plugins = build_plugins({"PAO_LOAD_PLUGINS": ""})
    plugins.manager.add_hookspecs(PickSpec)
    for name, picker in [("early", _picker("early")), ("late", _picker("late")), ("silent", _picker(None)),
                         ("failing", _picker("failing", fail=True))]:
        plugins.manager.register(picker, name=name)
    # last registered first: failing (recorded), silent (None), then late answers and early is never called
    assert plugins.manager.hook.pao_pick(value=7) == "late:7"
    assert [(f.plugin, f.stage, f.error) for f in plugins.failures] == [("failing", "pao_pick", "picker failing failed")]
    plugins.manager.register(_picker("first", tryfirst=True), name="first")
    plugins.manager.register(_picker("last", trylast=True), name="last")
    assert plugins.manager.hook.pao_pick(value=8) == "first:8"


def test_import_pao_core_stays_light() -> None:
    heavy = ("sqlalchemy", "psycopg", "libtmux", "requests", "appscript")
    code = (
        "import sys, pao_core, pao_core.cli, pao_core.plugins\n"
        "pao_core.plugins.get_plugins()\n"
        "print('\\n'.join(sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    loaded = {name.split(".")[0] for name in out}
    assert not loaded & set(heavy), f"heavy modules imported at start-up: {loaded & set(heavy)}"


def test_the_core_works_with_no_plugin_installed(pao) -> None:
    """pao_core names no plugin: with none loaded, plugins, doctor and brief run and say what is missing."""
    none = {"PAO_LOAD_PLUGINS": ""}
    listed = pao("plugins", "--json", env=none)
    assert listed.returncode == 0, listed.stderr
    assert {row["name"] for row in json.loads(listed.stdout)["plugins"]} == set(DEFAULT_PLUGINS)

    doctor = pao("doctor", "--json", env=none)
    checks = {(c["area"], c["name"]): c for c in json.loads(doctor.stdout)["checks"]}
    assert doctor.returncode == 0 and "Traceback" not in doctor.stderr
    assert not [key for key in checks if key[0] in ("host", "terminal")]  # hosts and terminals are the plugins'

    agents_only = pao("doctor", "--json", env={"PAO_LOAD_PLUGINS": "pao-agents"})
    checks = {(c["area"], c["name"]): c for c in json.loads(agents_only.stdout)["checks"]}
    assert agents_only.returncode == 1 and "Traceback" not in agents_only.stderr
    assert checks[("terminal", "")]["line"] == "no terminal driver is installed"
    assert checks[("host", "")]["line"] == "no host agent is installed"  # the default host: the first installed

    brief = pao("brief", "deploy the docs", "--json", env=none)
    assert "Traceback" not in brief.stderr and brief.stderr.count("\n") <= 1
    assert json.loads(brief.stdout)["backends"] == {}
