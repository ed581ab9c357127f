"""The suite's own pytest reporter, shipped into the verifier's environment (never imported by the suite).

The code under test runs inside the verifier's pytest process, so it can write a report of its
own and exit with status 0 before pytest reports anything. This module gives the suite a second
account of what pytest did, written by pytest's own hooks to a channel the task's files never
name: a file whose path (with a per-verification nonce) arrives in `SWE_RESIDUAL_VERDICT_CHANNEL`.

How it loads before any of the task's code: it is copied, with a `.pth` file importing it, into
every site-packages directory that holds pytest in the verifier's environment (site runs `.pth`
files even under `python -I`). Imported that way in a process that is pytest (read from
/proc/self/cmdline) while the variable is set, it opens the channel, removes the variable (the
tests cannot read the path from their environment) and names itself in `PYTEST_PLUGINS`, which
pytest reads before loading any conftest; once loaded, it puts `PYTEST_PLUGINS` back as it was,
so no child process inherits it. In any other process it does nothing.

Events, one JSON object a line: `start` (pid, pytest version), `file` (a test module's path and
the sha256 of its bytes as pytest is about to import it), `collect_error`, `test` (node id,
phase, outcome, whether it was an expected failure) and `finish` (the exit status). A session
that never writes `finish` ended from inside the tests (an `os._exit` in the code under test).

Kept compatible with every Python 3 and pytest a task image may hold: no syntax newer than 3.6,
hooks by their oldest signatures. It is imported before pytest starts, so pytest cannot rewrite its
asserts (it has none) and would warn about it, an error under a task's `filterwarnings = error`:
the marker below tells pytest to leave it alone. PYTEST_DONT_REWRITE
"""

import os
import sys

CHANNEL_VARIABLE = "SWE_RESIDUAL_VERDICT_CHANNEL"
MODULE_NAME = "swe_residual_verdict"
_PLUGINS_VARIABLE = "PYTEST_PLUGINS"

_fd = None
_plugins_before = None


def _is_pytest_process():
    try:
        with open("/proc/self/cmdline", "rb") as cmdline:
            words = [w.decode("utf-8", "replace") for w in cmdline.read().split(b"\0") if w]
    except OSError:
        words = list(getattr(sys, "orig_argv", None) or sys.argv)
    for index, word in enumerate(words[:4]):
        base = os.path.basename(word)
        if base in ("pytest", "py.test") or base.startswith("pytest-") or base.startswith("py.test-"):
            return True
        if word == "-m" and index + 1 < len(words) and words[index + 1] in ("pytest", "py.test"):
            return True
    return False


def _emit(event):
    if _fd is None:
        return
    import json  # here, not at the top: every Python process of the environment imports this module
    event["pid"] = os.getpid()
    line = (json.dumps(event, sort_keys=True) + "\n").encode("utf-8", "backslashreplace")
    try:
        os.write(_fd, line)
    except OSError:
        pass


def _activate():
    global _fd, _plugins_before
    path = os.environ.get(CHANNEL_VARIABLE)
    if not path or _fd is not None or not _is_pytest_process():
        return
    try:
        _fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError:
        return
    os.environ.pop(CHANNEL_VARIABLE, None)
    _plugins_before = os.environ.get(_PLUGINS_VARIABLE)
    names = [n for n in (_plugins_before or "").split(",") if n.strip()]
    os.environ[_PLUGINS_VARIABLE] = ",".join([MODULE_NAME] + names)


def _restore_plugins_variable():
    if _plugins_before is None:
        os.environ.pop(_PLUGINS_VARIABLE, None)
    else:
        os.environ[_PLUGINS_VARIABLE] = _plugins_before


def pytest_configure(config):
    _restore_plugins_variable()
    try:
        import pytest
        version = getattr(pytest, "__version__", None)
    except Exception:
        version = None
    _emit({"e": "start", "pytest": version})


def pytest_collectstart(collector):
    path = getattr(collector, "path", None) or getattr(collector, "fspath", None)
    if path is None or type(collector).__name__ != "Module":
        return
    import hashlib
    try:
        with open(str(path), "rb") as module:
            digest = hashlib.sha256(module.read()).hexdigest()
    except OSError:
        digest = None
    _emit({"e": "file", "path": str(path), "sha256": digest})


def pytest_collectreport(report):
    if report.failed:
        _emit({"e": "collect_error", "id": report.nodeid})


def pytest_runtest_logreport(report):
    _emit({"e": "test", "id": report.nodeid, "when": report.when, "outcome": report.outcome,
           "xfail": bool(getattr(report, "wasxfail", None) is not None)})


def pytest_sessionfinish(session, exitstatus):
    _emit({"e": "finish", "exitstatus": int(exitstatus)})


_activate()
