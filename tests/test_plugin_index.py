"""The plugin index: ``pao --help`` imports no plugin, and the index never hides a change."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from pao_core import plugin_index
from pao_core.plugins import load_config
from pao_core.plugins import catalog_of as index_catalog
from pao_core.plugins import Plugins, build_plugins
from pao_testing.installed import imported, install_module_plugin, run, site  # noqa: F401  (site: a fixture)

HELLO_PLUGIN = '''
from pao_core import hookimpl


@hookimpl
def pao_add_commands(subparsers, config):
    parser = subparsers.add_parser("hello", help="{help}")
    parser.set_defaults(func=lambda args, config: print("hello from an installed plugin") or 0)
'''

def install_hello(site: Path, tmp_path: Path, help_text: str = "say hello from an installed plugin") -> None:
    source = tmp_path / "pao-hello-src"
    shutil.rmtree(source, ignore_errors=True)
    install_module_plugin(source, site, "hello", HELLO_PLUGIN.format(help=help_text))


def test_help_and_version_from_the_index_import_no_plugin_no_pluggy_no_config() -> None:
    first = run("--help")
    assert first.returncode == 0, first.stderr
    second = run("--help")
    assert second.returncode == 0 and second.stdout == first.stdout
    for command in ("spawn", "list", "brief", "doctor", "plugins", "history", "memory"):
        assert f"\n    {command} " in second.stdout or f"\n    {command}\n" in second.stdout
    heavy = {"pluggy", "attrs", "attr", "cattrs", "importlib.metadata", "pao_core.plugins", "pao_core.config",
             "pao_core.hookspecs", "pao_tmux", "pao_postgres", "pao_historyworker", "pao_mcp", "pao_monitor"}
    assert not heavy & imported(second), heavy & imported(second)
    version = run("--version")
    assert version.returncode == 0 and version.stdout.startswith("pao ")
    assert "pluggy" not in imported(version)


def test_a_command_imports_only_the_plugins_it_needs() -> None:
    run("--help")
    listed = run("list")
    assert listed.returncode == 0, listed.stderr
    assert not {"pao_tmux", "pao_mcp", "pao_monitor", "pao_historyworker", "importlib.metadata"} & imported(listed)


ROUTER_PLUGIN = '''
from pao_core import hookimpl
from pao_core.contracts import CommandRouter


class Everywhere(CommandRouter):
    name = "everywhere"

    def route(self, args, config):
        print("routed", args.command)
        return 0


@hookimpl
def pao_command_routers(config):
    return [Everywhere()]
'''


@pytest.mark.hook("pao_command_routers")
def test_a_command_no_router_takes_loads_no_router(site: Path, tmp_path: Path) -> None:
    """pao-machines' router names the commands it may take: the plugin index keeps them, and ``pao brief`` (none
    of them) does not import it; a router that names none is asked by every command, from the index too."""
    run("--help")
    briefed, listed = run("brief", "a topic"), run("list")
    assert briefed.returncode == 0 and listed.returncode == 0, briefed.stderr + listed.stderr
    assert not {name for name in imported(briefed) if name.startswith("pao_machines")}
    assert "pao_machines.hooks" in imported(listed)

    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")]))}
    install_module_plugin(tmp_path / "pao-everywhere-src", site, "everywhere", ROUTER_PLUGIN)
    run("--help", env=env)  # a complete load: the index of these plugins
    everywhere = run("brief", "a topic", env=env)
    assert everywhere.returncode == 0 and everywhere.stdout == "routed brief\n", everywhere.stderr
    assert "pao_everywhere" in imported(everywhere)


def test_installing_and_removing_a_plugin_shows_in_help_at_once(site: Path, tmp_path: Path) -> None:
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")]))}
    before = run("--help", env=env)
    assert before.returncode == 0 and "hello" not in before.stdout
    assert "hello" not in run("--help", env=env).stdout  # from the index now

    install_hello(site, tmp_path)
    after = run("--help", env=env)
    assert "say hello from an installed plugin" in after.stdout, after.stdout
    hello = run("hello", env=env)
    assert hello.returncode == 0 and hello.stdout == "hello from an installed plugin\n", hello.stderr
    assert run("hello", env=env).stdout == "hello from an installed plugin\n"  # served through the index

    # an edited plugin (as with an editable install: no metadata changes) is seen too
    module = site / "pao_hello.py"
    module.write_text(HELLO_PLUGIN.format(help="say hello, edited"))
    assert "say hello, edited" in run("--help", env=env).stdout

    module.unlink()
    for dist_info in site.glob("pao_hello-*.dist-info"):
        shutil.rmtree(dist_info)
    removed = run("--help", env=env)
    assert removed.returncode == 0 and "hello" not in removed.stdout
    gone = run("hello", env=env)  # the index remembers which plugin added it
    assert (gone.returncode, gone.stderr.splitlines()[0]) == (
        1, "pao: 'pao hello' is not available: the plugin that provides it (pao-hello) is not installed")


def test_the_core_reserves_no_command_and_names_the_plugin_a_command_came_from(tmp_path: Path) -> None:
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert run("--help", env=cache).returncode == 0  # a complete load: the index remembers who adds each command
    none = {**cache, "PAO_LOAD_PLUGINS": ""}
    listed = run("--help", env=none)
    assert "    brief " in listed.stdout and "    spawn " not in listed.stdout and "    list " not in listed.stdout
    expected = ("pao: 'pao spawn' is not available: the plugin that provides it (pao-agents) is not loaded: "
                "PAO_LOAD_PLUGINS or PAO_DISABLE_PLUGINS leaves it out")
    for args in (["spawn", "x"], ["spawn", "--json", "--help"], ["spawn"]):  # a complete load, then from the index
        left_out = run(*args, env=none)
        assert (left_out.returncode, left_out.stderr.splitlines()[0]) == (1, expected), left_out.stderr
        wants_json = "--json" in args
        assert left_out.stdout == ('{"error": ' + json.dumps(expected.removeprefix("pao: ")) + ', "code": 1}\n'
                                   if wants_json else "") and "Traceback" not in left_out.stderr
    unknown = run("nonesuch", env=none)
    assert unknown.returncode == 2 and "invalid choice: 'nonesuch'" in unknown.stderr
    fresh = run("spawn", "x", env={"XDG_CACHE_HOME": str(tmp_path / "fresh"), "PAO_LOAD_PLUGINS": ""})
    assert fresh.returncode == 2 and "invalid choice: 'spawn'" in fresh.stderr  # no index remembers it: argparse says


def test_the_plugin_a_command_came_from_is_named_only_when_the_index_remembers_a_plain_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert plugin_index.missing_plugin("y", set(), False, {}) is None  # no index yet
    Path(plugin_index.cache_file()).parent.mkdir(parents=True)
    Path(plugin_index.cache_file()).write_text(json.dumps({"known": {"x": "evil\x1b[2J", "y": "pao-y", "z": 3}}))
    assert plugin_index.missing_plugin("x", set(), False, {}) is None  # not a distribution's name: not shown
    assert plugin_index.missing_plugin("z", set(), False, {}) is None
    assert plugin_index.missing_plugin("y", {"pao-y"}, False, {}) is None  # installed: it no longer adds y
    assert plugin_index.missing_plugin("y", set(), False, {}) == (
        "'pao y' is not available: the plugin that provides it (pao-y) is not installed")
    assert plugin_index.missing_plugin("y", set(), True, {}).endswith("(pao-y) is not installed, or did not load "
                                                                      "('pao plugins' lists what failed)")
    for environ in ({"PAO_DISABLE_PLUGINS": "pao_y"}, {"PAO_LOAD_PLUGINS": "pao-x"}):
        assert plugin_index.missing_plugin("y", set(), False, environ).endswith(
            "(pao-y) is not loaded: PAO_LOAD_PLUGINS or PAO_DISABLE_PLUGINS leaves it out")


def test_help_and_version_work_whatever_the_config_says(pao_config_file: Path) -> None:
    run("--help")
    pao_config_file.write_text("[briefing]\nmax_items = -3\n[backends.longterm]\nurll = 'x'\n")
    for args in (["--help"], ["--version"]):
        result = run(*args)
        assert result.returncode == 0, result.stderr
    brief = run("brief", "anything")
    assert brief.returncode == 2 and "max_items" in brief.stderr


def test_a_broken_plugin_is_never_cached_and_reported_on_every_run(site: Path, tmp_path: Path) -> None:
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")]))}
    install_hello(site, tmp_path)
    (site / "pao_hello.py").write_text("raise RuntimeError('broken on purpose')\n")
    for _ in range(2):
        report = run("plugins", "--json", env=env)
        failures = json.loads(report.stdout)["failures"]
        assert [(f["plugin"], f["stage"]) for f in failures] == [("hello", "load")], report.stderr
        assert "pluggy" in imported(run("--help", env=env))  # no index: every run loads (and checks) all


def test_the_index_holds_until_a_distribution_appears_on_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "path-folder"
    folder.mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(folder)])
    plugins = build_plugins()
    config = load_config()
    plugin_index.write_index(os.environ, index_catalog(plugins, config))
    assert plugin_index.read_index(os.environ) is not None
    (folder / "unrelated.txt").write_text("a file that is not a distribution")
    assert plugin_index.read_index(os.environ) is not None
    (folder / "new_dist-1.0.dist-info").mkdir()
    assert plugin_index.read_index(os.environ) is None
    monkeypatch.setenv("PAO_DISABLE_PLUGINS", "pao-tmux")
    plugin_index.write_index(os.environ, index_catalog(plugins, config))
    assert plugin_index.read_index(os.environ) is not None
    monkeypatch.delenv("PAO_DISABLE_PLUGINS")
    assert plugin_index.read_index(os.environ) is None


def test_plugins_loaded_on_use_keep_a_complete_loads_call_order() -> None:
    complete = build_plugins()
    HOOKS = tuple(name for name in vars(complete.manager.hook) if name.startswith("pao_"))
    catalog = index_catalog(complete, load_config())
    assert catalog is not None
    expected = {hook: [impl.plugin_name for impl in getattr(complete.manager.hook, hook).get_hookimpls()]
                for hook in HOOKS}
    for order in (HOOKS, tuple(reversed(HOOKS))):  # later plugins first, then earlier ones: re-registered in order
        lazy = Plugins(index=catalog)
        assert lazy.manager.list_name_plugin() == []
        for hook in order:
            lazy.load(hook)
        got = {hook: [impl.plugin_name for impl in getattr(lazy.manager.hook, hook).get_hookimpls()] for hook in HOOKS}
        assert got == expected
        assert lazy.sources == complete.sources


def test_every_hook_method_loads_what_it_calls() -> None:
    """A hook called as ``self.manager.hook.NAME`` would skip the plugins not imported yet."""
    import inspect

    assert "self.manager.hook." not in inspect.getsource(Plugins)


def test_pao_and_the_processes_it_starts_read_one_index(tmp_path: Path) -> None:
    """``pao`` (its script's folder first on sys.path), ``pao mcp`` and a hook's recorder (``python -I -m`` from
    another folder) keep one index: none of them rewrites it for the others (each rewrite cost the next ``pao`` a
    complete plugin load and a rewrite of its own)."""
    import subprocess

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    listed = subprocess.run([str(Path(sys.executable).with_name("pao")), "list"], env=env, capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    index = tmp_path / "cache" / "pao" / "plugins.json"
    written = index.read_bytes()
    probe = "import os; from pao_core import plugin_index; print(plugin_index.read_index(os.environ) is not None)"
    for flags, folder in ((["-I"], "/"), ([], str(tmp_path)), (["-I"], str(tmp_path))):
        read = subprocess.run([sys.executable, *flags, "-c", probe], cwd=folder, env=env, capture_output=True,
                              text=True, timeout=60)
        assert read.stdout == "True\n", (flags, folder, read.stderr)
    again = subprocess.run([str(Path(sys.executable).with_name("pao")), "list"], env=env, capture_output=True,
                           text=True, timeout=120)
    assert again.returncode == 0 and index.read_bytes() == written
