"""`swe-residual dataset build DIR --fetch`: the sources a manifest names, cloned by the suite.

A real git server on loopback (`git daemon`) serves bare copies of the small repositories
test_dataset_build.py makes; the manifest names them by public-looking URLs
(https://github.com/owner/...), which git reaches through `url.<base>.insteadOf` given in the
environment (GIT_CONFIG_COUNT/KEY/VALUE), as a user behind a mirror would. The cache is the
test's own (SWE_RESIDUAL_CACHE). Starts processes (git): not `unit`; no Docker.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_dataset_build import _manifest, _tree, _write, sources  # noqa: F401  (the `sources` fixture)

from swe_residual.cli.main import main as cli_main
from swe_residual.residualize.published.fetch import clone_name

GIT_DAEMON = Path("/usr/lib/git-core/git-daemon")
BENCH, RUNS = "https://github.com/owner/bench", "https://github.com/owner/runs"
STATE = "tiny-task/terminus__openai_gpt_4o_mini-1"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def _mirror(monkeypatch: pytest.MonkeyPatch, port: int, *more: tuple[str, str]) -> None:
    """git's configuration for this test's processes: github.com is the server on `port`."""
    pairs = [(f"url.git://127.0.0.1:{port}/.insteadOf", "https://github.com/"), *more]
    monkeypatch.setenv("GIT_CONFIG_COUNT", str(len(pairs)))
    for index, (key, value) in enumerate(pairs):
        monkeypatch.setenv(f"GIT_CONFIG_KEY_{index}", key)
        monkeypatch.setenv(f"GIT_CONFIG_VALUE_{index}", value)


@pytest.fixture
def server(tmp_path: Path, sources: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:  # noqa: F811
    """`git daemon` serving owner/bench and owner/runs on a free loopback port; the port."""
    if not GIT_DAEMON.is_file():
        pytest.fail(f"{GIT_DAEMON} is missing: install Debian's git package (it ships git daemon)")
    base = tmp_path / "served"
    for name, repo in (("bench", sources["tasks"]), ("runs", sources["runs"])):
        subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(base / "owner" / name)], check=True)
    port = _free_port()
    # It serves a commit's trees without its files when asked (as GitHub does): not git's default.
    served = dict(os.environ, GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="uploadpack.allowFilter", GIT_CONFIG_VALUE_0="true")
    daemon = subprocess.Popen([str(GIT_DAEMON), "--export-all", f"--base-path={base}", "--listen=127.0.0.1",
                               f"--port={port}", "--enable=upload-pack", "--reuseaddr", str(base)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=served)
    try:
        deadline = time.monotonic() + 10
        while True:  # until it listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if daemon.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"git daemon did not listen on 127.0.0.1:{port} (exit {daemon.poll()})")
                time.sleep(0.05)
        _mirror(monkeypatch, port)
        monkeypatch.setenv("SWE_RESIDUAL_CACHE", str(tmp_path / "cache"))
        yield port
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


def _published(tmp_path: Path, sources: dict[str, Any], name: str, **changes: Any) -> tuple[Path, dict[str, Any]]:  # noqa: F811
    manifest = _manifest(sources)
    manifest["sources"]["bench"]["repository"] = BENCH
    manifest["sources"]["collection"]["repository"] = RUNS
    for key, value in changes.items():
        source, _, field = key.partition("__")
        manifest["sources"][source][field] = value
    return _write(tmp_path / name, manifest), manifest


def _written(directory: Path) -> dict[str, bytes]:
    return {path: data for path, data in _tree(directory).items() if path != "manifest.toml"}


def test_fetch_writes_what_clones_given_by_hand_write_and_fetches_once(
        tmp_path: Path, sources: dict[str, Any], server: int, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    by_hand, _ = _published(tmp_path, sources, "by-hand")
    assert cli_main(["dataset", "build", str(by_hand), "--source", f"bench={sources['tasks']}",
                     "--source", f"collection={sources['runs']}"]) == 0
    fetched, _ = _published(tmp_path, sources, "fetched")
    capsys.readouterr()
    assert cli_main(["dataset", "build", str(fetched), "--fetch"]) == 0
    out = capsys.readouterr().out
    assert _written(fetched) == _written(by_hand) and f"{STATE.split('/')[0]}/residual/" in "".join(_written(fetched))
    # One request for the commit and its trees, one for the files read (the task folder and the
    # licence; the trial's three files).
    for name, url, commit, files in (("bench", BENCH, sources["tasks_commit"], len(sources["task_files"]) + 1),
                                     ("collection", RUNS, sources["runs_commit"], 3)):
        assert f"source {name}: fetching {url} at {commit[:12]} ..." in out
        assert re.search(rf"source {name}: done in [0-9.]+ s \({files} file\(s\); ", out), out
    # Shallow, in the cache under owner+name: the manifest's commit alone, not the later upstream one.
    bench = tmp_path / "cache" / "sources" / "owner+bench"
    assert _git(bench, "rev-parse", "--is-shallow-repository") == "true"
    assert _git(bench, "rev-list", "--all") == sources["tasks_commit"]
    # A second run fetches nothing: it succeeds with the server gone (github.com now a closed port).
    _mirror(monkeypatch, _free_port())
    shutil.rmtree(fetched / "tiny-task")
    assert cli_main(["dataset", "build", str(fetched), "--fetch"]) == 0
    out = capsys.readouterr().out
    assert "fetching" not in out and f"source bench: {BENCH} at {sources['tasks_commit'][:12]} already in {bench}" in out
    assert _written(fetched) == _written(by_hand)


def test_only_the_sources_the_chosen_states_need_are_fetched_and_a_given_clone_wins(
        tmp_path: Path, sources: dict[str, Any], server: int, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    # A third source whose repository no server has, holding states of its own.
    directory, manifest = _published(tmp_path, sources, "tiny")
    manifest["sources"]["gone"] = {"repository": "https://github.com/owner/gone", "commit": "a" * 40,
                                   "licence": "not stated"}
    manifest["states"]["tiny-task/gone-1"] = dict(manifest["states"][STATE], source="gone", trial="runs/x")
    _write(directory, manifest)
    # Only the states of `collection` (and the task they are on): `gone` is never asked for, and
    # the tasks' source given by hand is used instead of fetching it.
    capsys.readouterr()
    assert cli_main(["dataset", "build", str(directory), "--fetch", "--runs-from", "collection",
                     "--source", f"bench={sources['tasks']}"]) == 0
    out = capsys.readouterr().out
    assert "source gone" not in out and "source bench" not in out and "source collection: done in " in out
    assert sorted(p.name for p in (directory / "tiny-task" / "residual").iterdir()) == [STATE.split("/")[1]]
    assert not (tmp_path / "cache" / "sources" / "owner+bench").exists()
    # All of it: `gone` is unreachable, one error naming the source and the URL with git's own
    # answer; exit status 2.
    assert cli_main(["dataset", "build", str(directory), "--fetch"]) == 2
    err = capsys.readouterr().err
    assert "error: source gone: https://github.com/owner/gone: cannot be fetched: git says: " in err
    assert "access denied or repository not exported: /owner/gone" in err and len(err.splitlines()) == 1
    # By hand, the same choice needs no --source for `gone` either; a name not in the manifest is refused.
    assert cli_main(["dataset", "build", str(directory), "--runs-from", "collection", "--source",
                     f"bench={sources['tasks']}", "--source", f"collection={sources['runs']}"]) == 0
    assert cli_main(["dataset", "build", str(directory), "--runs-from", "elsewhere"]) == 2
    assert "--runs-from elsewhere: not a source of states" in capsys.readouterr().err


def test_a_bad_commit_or_checksum_is_refused_and_a_refused_commit_id_falls_back_to_a_full_fetch(
        tmp_path: Path, sources: dict[str, Any], server: int, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    directory, _ = _published(tmp_path, sources, "bad-commit", collection__commit="f" * 40)
    capsys.readouterr()
    assert cli_main(["dataset", "build", str(directory), "--fetch"]) == 2
    err = capsys.readouterr().err
    assert f"source collection: {RUNS}: commit {'f' * 40} is not there" in err and "not our ref" in err
    directory, manifest = _published(tmp_path, sources, "bad-checksum")
    manifest["tasks"]["tiny-task"]["sha256"] = "0" * 64
    _write(directory, manifest)
    assert cli_main(["dataset", "build", str(directory), "--fetch"]) == 2
    assert "task tiny-task: tasks/tiny-task at" in capsys.readouterr().err and not (directory / "tiny-task").exists()
    # A server that refuses a bare commit id (git's protocol v0 without allowReachableSHA1InWant,
    # forced here from the client's side): `bench`'s commit is no branch's tip, so every branch is
    # fetched in full; `collection`'s is its branch's tip, given by its id, but its files are not
    # (fetched again whole). The build succeeds.
    monkeypatch.setenv("SWE_RESIDUAL_CACHE", str(tmp_path / "cache-v0"))
    _mirror(monkeypatch, server, ("protocol.version", "0"))
    directory, _ = _published(tmp_path, sources, "protocol-v0")
    assert cli_main(["dataset", "build", str(directory), "--fetch"]) == 0
    bench = tmp_path / "cache-v0" / "sources" / "owner+bench"
    assert _git(bench, "rev-parse", "--is-shallow-repository") == "false"
    later = _git(sources["tasks"], "rev-parse", "HEAD")
    assert sorted(_git(bench, "rev-list", "--all").split()) == sorted([sources["tasks_commit"], later])
    # ... with their files: such a server would refuse a file's id as well.
    there = subprocess.run(["git", "-C", str(bench), "cat-file", "-e", f"{later}:tasks/tiny-task/instruction.md"],
                           env=dict(os.environ, GIT_NO_LAZY_FETCH="1"), capture_output=True, check=False)
    assert there.returncode == 0
    assert (directory / STATE.split("/")[0] / "residual" / STATE.split("/")[1] / "commands.jsonl").is_file()


@pytest.mark.unit
@pytest.mark.parametrize(("url", "name"), [
    ("https://github.com/Lore-Hex/trustedrouter-benchmarks", "Lore-Hex+trustedrouter-benchmarks"),
    ("https://github.com/owner/name.git/", "owner+name"),
    ("git@example.org:team/repo.git", "team+repo"),
    ("/srv/git/one", "git+one"),
    ("https://example.org/a/../b/..", "a+b"),  # never a path out of the cache
])
def test_a_repository_is_cached_under_its_owner_and_name(url: str, name: str) -> None:
    assert clone_name(url) == name
