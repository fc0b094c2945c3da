"""Step 1: folders found in topics, agent names, hostile input."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pao_core.errors import ValidationError
from pao_agents.names import (check_name, name_from_folder, name_from_topic, numbered, resolve_folder, split_topic,
                              unique_name)
from pao_core.topic import reject_control


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "code" / "api").mkdir(parents=True)
    (tmp_path / "my code").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(
    ("topic", "expected_topic", "expected_folder"),
    [
        ("fix the login bug in ~/code/api", "fix the login bug", "~/code/api"),
        ("fix the login bug in ~/code/api.", "fix the login bug", "~/code/api"),
        ("~/code/api/: tidy the imports", "tidy the imports", "~/code/api/"),
        ('look at "~/my code" for the typo', "look for the typo", "~/my code"),
        ("refactor the parser", "refactor the parser", None),
        ("fix the /api/login endpoint", "fix the /api/login endpoint", None),
        ("read ~/notes.txt and summarise", "read ~/notes.txt and summarise", None),
    ],
)
def test_folder_is_taken_out_of_the_topic(home: Path, topic: str, expected_topic: str, expected_folder: str | None) -> None:
    found = split_topic(topic, cwd=str(home))
    assert (found.topic, found.folder) == (expected_topic, expected_folder)


def test_relative_and_absolute_folders(home: Path) -> None:
    assert split_topic("work in ./code/api", cwd=str(home)).folder == "./code/api"
    assert split_topic(f"work in {home}/code", cwd="/").folder == f"{home}/code"
    assert resolve_folder("./code/api", cwd=str(home)) == os.path.realpath(home / "code" / "api")
    os.symlink(home / "code" / "api", home / "link")
    assert resolve_folder("~/link") == os.path.realpath(home / "code" / "api")


@pytest.mark.parametrize(
    ("topic", "message"),
    [
        ("fix ~/nope now", "folder ~/nope (named in the topic) does not exist"),
        ("move ~/code/api to ~/my", "folder ~/my (named in the topic) does not exist"),
        ("compare ~/code/api with ~/code", "the topic names several folders (~/code/api, ~/code); pass --folder"),
    ],
)
def test_bad_folders_in_topics(home: Path, topic: str, message: str) -> None:
    with pytest.raises(ValidationError) as error:
        split_topic(topic, cwd=str(home))
    assert str(error.value) == message


def test_resolve_folder_rejects(home: Path) -> None:
    with pytest.raises(ValidationError, match="is not a folder"):
        resolve_folder("~/notes.txt")
    with pytest.raises(ValidationError, match="does not exist"):
        resolve_folder("~/absent")
    with pytest.raises(ValidationError, match="control character"):
        resolve_folder("~/code\napi")


@pytest.mark.parametrize("name", ["", "-x", "_x", "a b", "a/b", "..", "a" * 65, "ünï", "a;b", "a\x00"])
def test_hostile_names(name: str) -> None:
    with pytest.raises(ValidationError, match="is not allowed"):
        check_name(name)


def test_names_from_folders() -> None:
    assert name_from_folder("/x/api") == "api"
    assert name_from_folder("/x/my app!") == "my-app"
    assert name_from_folder("/x/.hidden") == "hidden"
    assert name_from_folder("/x/über") == "ber"
    assert name_from_folder("/") == "agent"
    assert check_name(name_from_folder("/x/" + "y" * 300)) == "y" * 56
    assert unique_name("api", {"api", "api-2"}) == "api-3"
    assert check_name(numbered("z" * 64, 12)) == "z" * 61 + "-12"


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b", "\x7f", "\x85", "\x9b"])
def test_control_characters(char: str) -> None:
    with pytest.raises(ValidationError, match="control character"):
        reject_control(f"a{char}b", "the topic")
    with pytest.raises(ValidationError, match="control character"):
        reject_control(f"a{char}b", "the text", allow_newlines=True)
    assert reject_control("a\nb\tc", "the text", allow_newlines=True) == "a\nb\tc"


def test_names_come_from_the_topic_s_words() -> None:
    assert name_from_topic("fix billing retries") == "fix-billing-retries"
    assert name_from_topic("Fix the login bug, please!") == "fix-login-bug"
    assert name_from_topic("rename the café über-module and then ship it") == "rename-cafe-uber-module"
    assert name_from_topic("a") == "a"  # nothing but filler: the filler it is
    assert name_from_topic("!!! ???") is None and name_from_topic("日本語") is None  # the folder's name, then
    long = name_from_topic("x" * 300 + " more")
    assert long == "x" * 40 and check_name(numbered(long, 9999)) == long + "-9999"
    assert check_name(name_from_topic("; rm -rf / $(id) `x` ../etc/passwd")) == "rm-rf-id-x"
