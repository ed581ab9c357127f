"""Whether a passing reward is backed by what the tests reported (issue 33).

A reward file says 1; three accounts can contradict it:
- the expected tests (swe_residual/environments/verifier/expected.py): a required test that did not pass, a
  report that is empty, or (expected tests learned from the clean state) one that names other
  tests or leaves some out;
- the suite's own reporter (swe_residual/environments/verifier/channel.py): a pytest session that never
  finished (the process ended from inside the tests), a test reported passed that pytest's own
  hooks saw fail or never run, or whose setup, call or teardown raised before its report was
  made (a report rewritten in-process), no pytest at all where the clean state had one;
- the hidden test files as pytest imported them, against the task's own.
Any contradiction makes the verdict a failure: reward 0, with the reward file's figures kept in
`rewards` and a note saying what contradicted it. A reward below 1 is never questioned: a
contradiction can only cost a claimed pass.
"""

from __future__ import annotations

import re
from dataclasses import replace

from swe_residual.environments.verifier.channel import PASSED, SKIPPED, STATUS_RANK, ChannelReport, aliases
from swe_residual.environments.verifier.expected import CLEAN_RUN, METADATA, ExpectedTests
from swe_residual.environments.verifier.outputs import ACCEPTANCE_BUCKETS, Verdict, reported_id

_SHOWN = 3  # test ids quoted in a note


def check_claim(verdict: Verdict, expected: ExpectedTests | None, channel: ChannelReport | None,
                hidden_tests: dict[str, str] | None = None, tests_root: str | None = None) -> Verdict:
    """The verdict, made a failure when its passing reward is contradicted."""
    if not verdict.success:
        return verdict
    problems = against_expected(verdict.tests, expected)
    problems += against_channel(verdict.tests, channel, expected)
    if channel is not None and hidden_tests is not None and tests_root is not None:
        problems += changed_test_files(channel, hidden_tests, tests_root)
    if not problems:
        return verdict
    claimed = verdict.reward
    note = (f"contradicted reward: the reward file says {claimed:g}, but " + "; ".join(problems)
            + ": scored 0 (the agent's failure)")
    return replace(verdict, reward=0.0, notes=(*verdict.notes, note), claimed_reward=claimed)


def bare_id(test_id: str) -> str:
    """A report's id without DeepSWE's bucket label (`[f2p] tests.test_x` -> `tests.test_x`)."""
    for bucket in ACCEPTANCE_BUCKETS:
        label = f"[{bucket}] "
        if test_id.startswith(label):
            return test_id[len(label):]
    return test_id


def _quote(ids: list[str]) -> str:
    shown = ", ".join(ids[:_SHOWN])
    return shown + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")


def against_expected(tests: dict[str, str], expected: ExpectedTests | None) -> list[str]:
    if expected is None or not expected.statuses:
        return []  # a verifier that reports no test on its clean state: reward only, nothing to hold it to
    if expected.source == METADATA:
        not_passing = [f"{t} {tests.get(reported_id(t, tests) or t, 'missing')}" for t in expected.statuses
                       if tests.get(reported_id(t, tests) or t) != PASSED]
        if not_passing:
            return [f"{len(not_passing)} of {len(expected.statuses)} acceptance test(s) of tests/config.json "
                    f"did not pass in the report ({_quote(not_passing)})"]
        return []
    assert expected.source == CLEAN_RUN
    # Both reports are the task's own verifier's, names as it writes them: a DeepSWE grader's
    # `[f2p] ` / `[p2p] ` labels come off both sides alike, or a clean start's labelled names
    # would never meet the final state's.
    reported = {bare_id(t): status for t, status in tests.items()}
    clean = {bare_id(t): status for t, status in expected.statuses.items()}
    if not reported:
        return [f"the report names no test (the clean state's report named {len(clean)})"]
    problems: list[str] = []
    if expected.complete:
        outside = sorted(set(reported) - set(clean))
        if outside:
            problems.append(f"the report names {len(outside)} test(s) the clean state's report does not ({_quote(outside)})")
        missing = sorted(set(clean) - set(reported))
        if missing:
            problems.append(f"the report leaves out {len(missing)} test(s) of the clean state's report ({_quote(missing)})")
    # A test skipped on the clean state may be skipped here too; anything else must pass.
    not_passing = sorted(f"{t} {status}" for t, status in reported.items() if t in clean
                         and status != PASSED and not (status == SKIPPED and clean[t] == SKIPPED))
    if not_passing:
        problems.append(f"{len(not_passing)} test(s) did not pass in the report ({_quote(not_passing)})")
    return problems


def against_channel(tests: dict[str, str], channel: ChannelReport | None,
                    expected: ExpectedTests | None) -> list[str]:
    if channel is None:
        return []  # not installed on this backend
    if not channel.sessions:
        if expected is not None and expected.reporter_seen:
            return ["no pytest ran under the suite's reporter, though one did on the clean state"]
        return []
    problems: list[str] = []
    if channel.unfinished:
        problems.append(f"{channel.unfinished} pytest session(s) ended without finishing "
                        "(the process exited from inside the tests)")
    # Per alias, the best status any session gave the test (a DeepSWE verifier runs the tests
    # twice: on the base commit, where they fail, then on the work).
    # Within a session an id without parameters stands for all its cases: passed only when every
    # case passed.
    seen: dict[str, str] = {}
    for session in channel.sessions:
        in_session: dict[str, str] = {}
        # A phase that raised outranks the report made of it: the report can be rewritten in-process.
        statuses = dict(session.tests)
        for node_id, status in session.raised.items():
            if STATUS_RANK[status] > STATUS_RANK[statuses.get(node_id, PASSED)]:
                statuses[node_id] = status
        for node_id, status in statuses.items():
            for alias in aliases(node_id):
                if in_session.get(alias, PASSED) == PASSED:
                    in_session[alias] = status
        for alias, status in in_session.items():
            if seen.get(alias) != PASSED:
                seen[alias] = status
    claimed = sorted(bare_id(t) for t, status in tests.items() if status == PASSED)
    unseen = [t for t in claimed if t not in seen]
    contradicted = [f"{t} {seen[t]}" for t in claimed if t in seen and seen[t] != PASSED]
    if contradicted:
        problems.append(f"{len(contradicted)} test(s) reported passed were not passed by pytest's own account "
                        f"({_quote(contradicted)})")
    if unseen and len(unseen) < len(claimed):
        problems.append(f"{len(unseen)} test(s) reported passed never ran under pytest ({_quote(unseen)})")
    elif unseen:
        # No id in common (a report naming tests its own way): the counts must agree at least.
        most = max(sum(1 for s in session.tests.values() if s == PASSED) for session in channel.sessions)
        if len(claimed) > most:
            problems.append(f"the report has {len(claimed)} passed test(s), pytest's own account at most {most}")
    return problems


def changed_test_files(channel: ChannelReport, hidden_tests: dict[str, str], tests_root: str) -> list[str]:
    """Hidden test modules that were not the task's when pytest imported them (swapped during the run)."""
    prefix = tests_root.rstrip("/") + "/"
    changed = sorted(path for path, digest in channel.files.items()
                     if path.startswith(prefix) and path[len(prefix):] in hidden_tests
                     and digest != hidden_tests[path[len(prefix):]])
    if changed:
        return [f"hidden test file(s) were not the task's when pytest imported them ({_quote(changed)})"]
    return []


# What in a change reaches into pytest's machinery: a conftest.py, pytest's own files or a plugin
# package's, a configuration file pytest reads, a hook implementation or wrapper, an entry point
# of the `pytest11` group, pluggy.
_MACHINERY_PATH = re.compile(r"(^|/)(conftest\.py|pytest\.ini|_pytest/|pytest/|pluggy/|pytest_[^/]*\.py|[^/]*\.pth)$"
                             r"|(^|/)(_pytest|pluggy)/")
_MACHINERY_LINE = re.compile(r"\bdef pytest_\w+|hookimpl|hookwrapper|\bpytest11\b|\bpluggy\b|\b_pytest\b"
                             r"|pluginmanager|PYTEST_PLUGINS|pytest_plugins")


def patch_touches_pytest(patch: str | None) -> list[str]:
    """The files of a patch whose change reaches into pytest's machinery (by their path, or by an
    added line: a hook, a hook wrapper, a plugin registration, pytest's internals)."""
    touched: list[str] = []
    current: str | None = None
    for line in (patch or "").splitlines():
        if line.startswith("+++ "):
            name = line[4:].strip()
            current = name[2:] if name.startswith("b/") else name
            if current != "/dev/null" and _MACHINERY_PATH.search(current) and current not in touched:
                touched.append(current)
        elif line.startswith("+") and current and current not in touched and _MACHINERY_LINE.search(line):
            touched.append(current)
    return touched


def pytest_machinery_note(channel: ChannelReport | None, tests_root: str | None, patch: str | None) -> str | None:
    """A note flagging a final state that touches pytest's machinery: hooks of the reporting
    path implemented outside pytest, the reporter and the hidden tests (code under test or a
    conftest registering them, seen by the suite's reporter as pytest ran), and files of the
    agent's patch that do (`patch_touches_pytest`). None when nothing does."""
    found: list[str] = []
    prefix = tests_root.rstrip("/") + "/" if tests_root else None
    if channel is not None:
        for hook, path in channel.hooks:
            if prefix and path.startswith(prefix):
                continue  # the task's own conftest
            if "/site-packages/" in path or "/dist-packages/" in path:
                continue  # an installed plugin (the image's, like pytest-cov)
            found.append(f"{hook} in {path}")
    found += [f"the patch changes {name}" for name in patch_touches_pytest(patch)]
    if not found:
        return None
    return (f"pytest machinery: the final state reaches into pytest's own reporting ({_quote(found)}); "
            "a pass it reports is held to the reporter's own account of each phase")
