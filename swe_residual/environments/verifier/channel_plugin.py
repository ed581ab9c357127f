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

Where it writes (issue 48): to the descriptor named in `SWE_RESIDUAL_VERDICT_FD` when it is a
pipe, which the suite's exec streams to the host as the tests run (nothing left in the machine
can rewrite what was already sent); else, when that descriptor did not reach this process (a
test.sh that starts pytest through Python's subprocess, which closes it), to the channel file.

Events, one JSON object a line: `start` (pid, pytest version), `file` (a test module's path and
the sha256 of its bytes as pytest is about to import it), `collect_error`, `test` (node id,
phase, outcome, whether it was an expected failure), `raw` (node id, phase, whether the phase
raised and whether that was a skip: taken by a hook wrapper around pytest_runtest_setup/call/
teardown, before any pytest_runtest_makereport hook can turn the report into something else),
`hook` (a hook implementation that is neither pytest's nor this reporter's: the hook and the
file it comes from, so code under test registering hooks is named) and `finish` (the exit
status). A session that never writes `finish` ended from inside the tests (an `os._exit` in the
code under test).

Kept compatible with every Python 3 and pytest a task image may hold: no syntax newer than 3.6,
hooks by their oldest signatures. It is imported before pytest starts, so pytest cannot rewrite its
asserts (it has none) and would warn about it, an error under a task's `filterwarnings = error`:
the marker below tells pytest to leave it alone. PYTEST_DONT_REWRITE
"""

import os
import sys

CHANNEL_VARIABLE = "SWE_RESIDUAL_VERDICT_CHANNEL"
STREAM_VARIABLE = "SWE_RESIDUAL_VERDICT_FD"
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


def _stream():
    """A private copy of the streamed descriptor, when this process holds it and it is a pipe."""
    import stat
    try:
        number = int(os.environ.get(STREAM_VARIABLE) or "")
        if not stat.S_ISFIFO(os.fstat(number).st_mode):
            return None
        return os.dup(number)  # not inherited by the processes the tests start
    except (ValueError, OSError):
        return None


def _activate():
    global _fd, _plugins_before
    path = os.environ.get(CHANNEL_VARIABLE)
    if not path or _fd is not None or not _is_pytest_process():
        return
    _fd = _stream()
    if _fd is None:
        try:
            _fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError:
            return
    os.environ.pop(CHANNEL_VARIABLE, None)
    os.environ.pop(STREAM_VARIABLE, None)
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


def _marked(function, **options):
    """`pytest.hookimpl(**options)` without importing pytest into every Python process: the
    marker is the attribute pluggy reads (all its options given, for every pluggy version)."""
    marks = {"hookwrapper": False, "wrapper": False, "optionalhook": False, "tryfirst": False,
             "trylast": False, "specname": None}
    marks.update(options)
    function.pytest_impl = marks
    return function


def _raised_outcome(item, excinfo):
    """(raised, skipped) of a phase: whether it raised, and whether that was a skip or an
    expected failure (imperative `pytest.skip`/`pytest.xfail`, or a test marked xfail)."""
    error = excinfo[1] if excinfo else None
    # unittest.TestCase tests: pytest keeps what unittest caught on the item instead of raising.
    if error is None and getattr(item, "_excinfo", None):
        error = item._excinfo[0].value if hasattr(item._excinfo[0], "value") else item._excinfo[0]
    if error is None:
        return False, False
    names = [klass.__name__ for klass in type(error).__mro__]
    skipped = "Skipped" in names or "XFailed" in names or "SkipTest" in names
    try:
        skipped = skipped or item.get_closest_marker("xfail") is not None
    except Exception:
        pass
    return True, skipped


def _phase_wrapper(when):
    def wrapper(item, *args):
        outcome = yield
        try:
            raised, skipped = _raised_outcome(item, outcome.excinfo)
            _emit({"e": "raw", "id": item.nodeid, "when": when, "raised": raised, "skip": skipped})
        except Exception:
            pass
    return _marked(wrapper, hookwrapper=True, tryfirst=True)


# The phase's own result: what the test function did, before pytest_runtest_makereport (where a
# wrapper of the code under test could turn a failure into a pass) sees it.
pytest_runtest_setup = _phase_wrapper("setup")
pytest_runtest_call = _phase_wrapper("call")
pytest_runtest_teardown = _phase_wrapper("teardown")

# The hooks through which code in pytest's process can change what is reported.
_WATCHED_HOOKS = ("pytest_runtest_makereport", "pytest_runtest_logreport", "pytest_runtest_protocol",
                  "pytest_runtest_call", "pytest_pyfunc_call", "pytest_report_teststatus",
                  "pytest_runtest_setup", "pytest_runtest_teardown", "pytest_sessionfinish",
                  "pytest_terminal_summary", "pytest_unconfigure")
_hooks_seen = set()


def _emit_hooks(config):
    """Name every implementation of a watched hook that is not pytest's, pluggy's or this module's."""
    own = os.path.splitext(os.path.abspath(__file__))[0]
    for name in _WATCHED_HOOKS:
        caller = getattr(config.pluginmanager.hook, name, None)
        if caller is None:
            continue
        for impl in caller.get_hookimpls():
            code = getattr(getattr(impl, "function", None), "__code__", None)
            path = os.path.abspath(code.co_filename) if code is not None else str(getattr(impl, "plugin_name", "?"))
            parts = path.split(os.sep)
            if "_pytest" in parts or "pluggy" in parts or os.path.splitext(path)[0] == own:
                continue
            if (name, path) not in _hooks_seen:
                _hooks_seen.add((name, path))
                _emit({"e": "hook", "hook": name, "file": path})


def pytest_collection_finish(session):
    _emit_hooks(session.config)


def pytest_sessionfinish(session, exitstatus):
    _emit_hooks(session.config)
    _emit({"e": "finish", "exitstatus": int(exitstatus)})


_activate()
