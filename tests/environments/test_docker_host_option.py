"""`--docker-host` (and its ini key) as pytest reads them: bad values are usage errors before
anything runs, named with their source (the engines themselves: test_docker_fleet.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from suitecheckout import make_checkout
from taskfactory import make_task

pytestmark = pytest.mark.slow


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.Pytester:
    make_checkout(pytester.path, monkeypatch, tmp_path / "cache")
    make_task(pytester.path / "data", "alpha")
    return pytester


def run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    return suite.runpytest_subprocess("residual_tests", "--dataset=data", "--agent=noop", "-p", "no:cacheprovider", *args)


def test_a_malformed_engine_url_is_a_usage_error(suite: pytest.Pytester) -> None:
    result = run(suite, "--docker-host=ftp://somewhere:21")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ftp://somewhere:21*"])


def test_engines_with_the_local_backend_are_a_usage_error(suite: pytest.Pytester) -> None:
    result = run(suite, "--backend=local", "--docker-host=unix:///var/run/docker.sock")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--docker-host needs --backend=docker*"])


def test_the_ini_key_is_read_and_the_command_line_replaces_it(suite: pytest.Pytester) -> None:
    suite.makeini("[pytest]\nresidual_docker_hosts =\n    ftp://from-the-ini:21\n")
    from_ini = run(suite)
    assert from_ini.ret == pytest.ExitCode.USAGE_ERROR
    from_ini.stderr.fnmatch_lines(["*ftp://from-the-ini:21*"])
    replaced = run(suite, "--backend=local", "--docker-host=unix:///var/run/docker.sock")
    replaced.stderr.no_fnmatch_line("*from-the-ini*")
