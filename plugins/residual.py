"""The SWE-Residual pytest plugin: one item per start, run records, the summary (its options
are in plugins/options.py).

Shaped like pytest's junitxml: the reporter keeps its state under a StashKey and is
registered on the controller only; workers send each item's run record to it on the test
report (`user_properties`), where it is appended to `results.jsonl` at once. The summary
is computed once, from the results file, at the end of the session.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

import pytest

from plugins.context import (
    RECORD_PROPERTY, agent_label, backend_choice_key, backend_choice_of, catalog_of, finished_key, labels_key,
    run_dir_key, settings_key, settings_of, skip_reasons,
)
from plugins.legend import legend
from plugins.options import given_settings, read_settings
from plugins.sendable import UNSENT_PROPERTY, WorkerGuard
from swe_residual.environments.agent_environment import require_docker
from swe_residual.agents.identity import AgentConfigConflict
from swe_residual.agents import AGENT_FORMS
from swe_residual.environments.choice import BackendChoice
from swe_residual.environments.registry import checked_docker_hosts
from swe_residual.dataset.load import not_a_directory
from swe_residual.residualize.check import not_a_dataset
from swe_residual.dataset.errors import ConfigError, DatasetError
from swe_residual.cli.run.gates import GateResult, evaluate_gates
from swe_residual.trial.handoff.views import BLIND, VIEWS
from swe_residual.cli.run.items import ItemSpec
from swe_residual.trial.records import (
    append_record, dedupe_records, fallback_path, infra_error_record, item_key, read_record_line, read_records,
    record_line,
)
from swe_residual.report.html import write_report
from swe_residual.cli.run.resume import prepare_resume
from swe_residual.cli.run.config import (
    RUN_CONFIG, changes, read_run_config, resume_settings, selection_of, stored_selection, write_run_config,
)
from swe_residual.cli.run.lock import RunLock
from swe_residual.cli.run.settings import RunSettings
from swe_residual.cli.run.sharding import assign_tasks
from swe_residual.report.status import interrupted_lines, resume_command, with_never_worked, with_run_status
from swe_residual.cli.run.verdict import run_verdict
from swe_residual.cli.run.preflight import dataset_warnings, task_errors
from swe_residual.metrics.summary.agent_order import in_agent_order
from swe_residual.metrics.summary.aggregate import summarize
from swe_residual.report.markdown import render_markdown
from swe_residual.metrics.summary.model import Summary
from swe_residual.report.terminal import render_terminal
from swe_residual.report.files import write_summary_files
from swe_residual.report.terminations import TerminationReport, termination_report
from swe_residual.trial.record_model import RunRecord
from swe_residual.dataset.values import Outcome, Start, Termination, Track

reporter_key = pytest.StashKey["ResidualReporter"]()
lock_key = pytest.StashKey[RunLock]()


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    for name in (*Start, *Track):
        config.addinivalue_line("markers", f"{name}: SWE-Residual item kind")
    for view in VIEWS[1:]:  # blind items carry no view marker: a default run's marks are unchanged
        config.addinivalue_line("markers", f"{handoff_marker(view)}: a Residual State item under the {view} handoff")
    try:
        settings = read_settings(config)
        stored = read_run_config(settings.resume) if settings.resume is not None else None
        if stored is not None:  # `--resume=DIR` alone runs the rest as the run started
            settings = resume_settings(stored, settings, given_settings(config))
        if settings.resume is not None:  # the run's -k/-m, unless given again
            _reuse_selection(config, stored_selection(settings.resume))
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from exc
    if settings.shard is not None and settings.gates:
        # Refused rather than deferred: a shard's run directory is one machine's, and a gate
        # there would judge part of the dataset (or, deferred, leave the shard's exit status
        # saying nothing). The merge of every shard is the one place a gate means the release.
        flags = sorted({gate.flag for gate in settings.gates})
        raise pytest.UsageError(
            f"{', '.join(flags)} with --shard={settings.shard[0]}/{settings.shard[1]}: a gate on one shard would "
            "judge part of the dataset; give the gates to `swe-residual report` of all the shards' results")
    config.stash[settings_key] = settings
    # An empty directory, or one without a task, would collect no item and end obscurely: say
    # so now. A missing directory is reported at collection (plugins/context.py).
    if settings.dataset.is_dir():
        problem = not_a_dataset(settings.dataset)
        if problem is not None:
            raise pytest.UsageError(f"--dataset: {problem}")
    elif settings.dataset.exists():
        raise pytest.UsageError(f"--dataset: {settings.dataset} {not_a_directory(settings.dataset)}")
    labels: dict[str, str] = {}
    for agent in settings.agents:
        try:
            # a typo in --agent (or a bad model, config or script) is a usage error before anything runs
            factory = settings.agent_factory(agent)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from exc
        if factory.label in labels.values():
            raise pytest.UsageError(f"--agent={agent}: named {factory.label!r} like another agent of this run; "
                                    "give each its own --agent-name")
        labels[agent] = factory.label
    config.stash[labels_key] = labels
    if settings.docker_hosts:  # a malformed URL, or engines with --backend=local: say so before anything runs
        try:
            checked_docker_hosts(settings.docker_hosts)
            if settings.backend == "local":
                raise ConfigError("--docker-host needs --backend=docker (or auto)")
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from exc
    if _is_worker(config):  # the controller's choice, so that every process runs on the same backend
        choice = config.workerinput.get("swe_residual_backend")  # type: ignore[attr-defined]
        if choice is not None:
            config.stash[backend_choice_key] = BackendChoice(choice[0], tuple(choice[1]), choice[2])
    if settings.agents:
        try:  # which backend, and an engine that does not answer, before anything runs
            choice = backend_choice_of(config)
            if not settings.agent_environment.empty:  # set-up scripts and mounts need containers
                require_docker(settings.agent_environment, choice.name)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from exc
    if _is_worker(config):
        workerinput = config.workerinput  # type: ignore[attr-defined]
        config.stash[run_dir_key] = Path(workerinput["swe_residual_run_dir"])
        config.stash[finished_key] = {tuple(key) for key in workerinput["swe_residual_finished"]}
        if settings.agents:  # a report xdist cannot send keeps its record on disk
            config.pluginmanager.register(WorkerGuard(config, config.stash[run_dir_key] / "results.jsonl"),
                                          "swe-residual-worker-guard")
        return
    if settings.resume is not None:
        resumable = [settings.resume / "results.jsonl", settings.resume / RUN_CONFIG,
                     fallback_path(settings.resume / "results.jsonl")]
        if not any(path.is_file() for path in resumable):
            raise pytest.UsageError(f"--resume={settings.resume}: no results.jsonl there to resume")
        directory = settings.resume
    else:
        run_id = settings.run_id or time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
        directory = settings.results_dir / run_id
    if not settings.agents or config.option.collectonly:
        # Nothing to evaluate (the project's own tests in this rootdir, a run that forgot
        # --agent, which collection reports, or only a listing of the items): no lock, no run.json.
        config.stash[run_dir_key] = directory
        config.stash[finished_key] = (prepare_resume(directory / "results.jsonl", rewrite=False)
                                      if settings.resume is not None else set())
    else:
        _claim_run_directory(config, settings, directory, labels)
    reporter = ResidualReporter(config, config.stash[run_dir_key].name)
    config.stash[reporter_key] = reporter
    config.pluginmanager.register(reporter, "swe-residual-reporter")


def _reuse_selection(config: pytest.Config, selection: dict[str, str]) -> None:
    """A resume selects the items its run selected: `-k`/`-m` from run.json when not given again."""
    if selection.get("keyword") and not config.option.keyword:
        config.option.keyword = selection["keyword"]
    if selection.get("markexpr") and not config.option.markexpr:
        config.option.markexpr = selection["markexpr"]


def _claim_run_directory(config: pytest.Config, settings: RunSettings, directory: Path, labels: dict[str, str]) -> None:
    """Lock the run directory for this run, check or write its configuration, prepare a resume."""
    lock = RunLock(directory)
    try:
        lock.acquire()
        stored = read_run_config(directory)
        if stored is not None:
            changed = changes(stored, settings)
            if changed:
                what = (f"--resume={directory}: the run was configured otherwise" if settings.resume is not None
                        else f"{directory} holds a run configured otherwise (continue it with --resume={directory} "
                             "and its own settings, or give this run another --run-id)")
                raise ConfigError(what + ":\n  " + "\n  ".join(changed))
        else:
            write_run_config(directory, settings, labels,
                             selection_of(config.option.keyword, config.option.markexpr))
    except (ConfigError, OSError) as exc:
        lock.release()
        raise pytest.UsageError(str(exc)) from exc
    config.stash[lock_key] = lock
    config.stash[run_dir_key] = directory
    config.stash[finished_key] = (prepare_resume(directory / "results.jsonl") if settings.resume is not None
                                  else set())


def pytest_unconfigure(config: pytest.Config) -> None:
    reporter = config.stash.get(reporter_key, None)
    if reporter is not None:
        # Here, after pytest's closing "N passed" line (printed at the end of the terminal
        # summary), so that the run's last lines are its verdict.
        reporter.write_verdict()
        del config.stash[reporter_key]
        config.pluginmanager.unregister(reporter)
    lock = config.stash.get(lock_key, None)
    if lock is not None:  # the run's records are all written: another run may have the directory
        del config.stash[lock_key]
        lock.release()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: every worker writes trajectories into the controller's run directory."""
    node.workerinput["swe_residual_run_dir"] = str(node.config.stash[run_dir_key])
    node.workerinput["swe_residual_finished"] = [list(key) for key in sorted(node.config.stash[finished_key], key=str)]
    choice = node.config.stash.get(backend_choice_key, None)
    if choice is not None:
        node.workerinput["swe_residual_backend"] = [choice.name, list(choice.engines), choice.reason]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep this shard's items, and drop the items a resumed run already finished."""
    settings = settings_of(config)
    finished = config.stash.get(finished_key, set())
    specs = {item.nodeid: spec_of(item) for item in items}
    assignment = None
    if settings.shard is not None:
        task_ids = [spec.task_id for spec in specs.values() if spec is not None]
        assignment = assign_tasks(task_ids, settings.shard[1])
    kept, deselected = [], []
    for item in items:
        spec = specs[item.nodeid]
        if spec is not None and assignment is not None and assignment[spec.task_id] != settings.shard[0]:  # type: ignore[index]
            deselected.append(item)
        elif spec is not None and spec.error is None and item_key(
                agent_label(config, spec.agent), spec.track, spec.task_id, spec.start, spec.state_id, spec.handoff,
                spec.rollout_index) in finished:
            deselected.append(item)
        else:
            kept.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def spec_of(item: pytest.Item) -> ItemSpec | None:
    callspec = getattr(item, "callspec", None)
    spec = callspec.params.get("residual_item") if callspec is not None else None
    # pytest's placeholder for an empty parameter set is no ItemSpec: that item has no spec.
    return spec if isinstance(spec, ItemSpec) else None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "residual_item" not in metafunc.fixturenames:
        return
    config = metafunc.config
    settings = settings_of(config)
    if not settings.agents:
        raise pytest.Collector.CollectError(
            f"no agent to evaluate: pass --agent=NAME ({', '.join(AGENT_FORMS)}), "
            "or set residual_agents in the ini file"
        )
    catalog = catalog_of(config)
    watchdog = config.pluginmanager.hasplugin("timeout")  # pytest-timeout, unless disabled with -p no:timeout
    # Items share a handful of mark combinations: one tuple each, not thousands of equal objects.
    marks_cache: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    params = []
    for spec in catalog.items(list(settings.agents), skip_reasons(config), settings.handoff, settings.rollouts):
        timeout = None
        if watchdog and spec.error is None:
            task = catalog.task(spec.task_id)
            timeout = settings.item_timeout(task.config.agent_timeout_sec, task.config.verifier_timeout_sec)
        key = (spec.error is None, spec.start, spec.track, spec.skip_reason, timeout, spec.handoff)
        marks = marks_cache.get(key)
        if marks is None:
            marks = marks_cache[key] = _marks(spec, timeout)
        params.append(pytest.param(spec, id=spec.id, marks=marks))
    metafunc.parametrize("residual_item", params)


def _marks(spec: ItemSpec, timeout: float | None) -> tuple[Any, ...]:
    marks: list[Any] = []
    if spec.error is None:
        # As plain strings: a mark's name goes into each report's keywords, which xdist's
        # transport (execnet) takes only as `str`, not as an enum member.
        marks += [getattr(pytest.mark, str(spec.start)), getattr(pytest.mark, str(spec.track))]
        if spec.state_id is not None and spec.handoff != BLIND:  # `-m handoff_trace` selects them
            marks.append(getattr(pytest.mark, handoff_marker(spec.handoff)))
    if timeout is not None:
        # The watchdog covers the whole item (the work is in a fixture), whatever the ini's
        # timeout_func_only says; the runner stops the agent itself at its budget, so this
        # only fires when the harness around it hangs.
        marks.append(pytest.mark.timeout(timeout, func_only=False))
    if spec.skip_reason:
        marks.append(pytest.mark.skip(reason=spec.skip_reason))
    return tuple(marks)


def _item_id(nodeid: str) -> str:
    """`residual_tests/test_starts.py::test_start[noop/alpha/clean]` -> `noop/alpha/clean`."""
    return nodeid[nodeid.find("[") + 1 : -1]


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ")


def _interruption(session: pytest.Session, collect_errors: int = 0) -> str | None:
    """Why the session stopped before its last item (Ctrl-C, -x, --maxfail, errors while
    collecting), or None."""
    if session.exitstatus == pytest.ExitCode.INTERRUPTED:
        if session.shouldstop or session.shouldfail:
            return str(session.shouldstop or session.shouldfail)
        if collect_errors:  # pytest stops before the first item: not a Ctrl-C
            return f"{collect_errors} error{'s' if collect_errors > 1 else ''} during collection"
        return "Ctrl-C"
    if session.shouldstop or session.shouldfail:
        return str(session.shouldstop or session.shouldfail)
    return None


def handoff_marker(view: str) -> str:
    return f"handoff_{view}"


def record_of(report: pytest.TestReport) -> RunRecord | None:
    for name, value in getattr(report, "user_properties", ()):  # a CollectReport has none
        if name == RECORD_PROPERTY:  # one line of ASCII JSON (fixtures/starts.py)
            return read_record_line(value)
    return None


def unsent_of(report: pytest.TestReport) -> dict[str, Any] | None:
    """Where a worker wrote the record it could not send (plugins/sendable.py), or None."""
    for name, value in getattr(report, "user_properties", ()):
        if name == UNSENT_PROPERTY:
            return value
    return None


class ResidualReporter:
    """Controller-side: appends each record as it arrives, prints the summary at the end."""

    def __init__(self, config: pytest.Config, run_id: str) -> None:
        self.config = config
        self.run_id = run_id
        self.run_dir = config.stash[run_dir_key]
        self.results_path = self.run_dir / "results.jsonl"
        self.seen: set[str] = set()
        self.collect_errors = 0  # collection errors: pytest stops before the first item
        self.finished = 0
        self.solved = 0
        self.summary: Summary | None = None
        self.gate_results: list[GateResult] = []
        self.terminations = TerminationReport()
        # Set when the session has finished: the verbose words pytest asks for again in the
        # `-rA` summary drop the running "solved so far", which by then is only the total.
        self.session_done = False
        # Residual State records, when no Clean Start ran at all (e.g. `-m residual`): the
        # headline table compares against the same tasks' Clean Starts, so it would be all dashes.
        self.residual_only = 0
        self.problems: list[str] = []
        # Records that could not be appended to results.jsonl (a read-only or full disk): kept
        # here for the summary, written to `fallback_path`, and the run ends non-zero.
        self.unsaved: list[RunRecord] = []
        self.write_error: str | None = None
        self.fallback_path = fallback_path(self.results_path)
        self.fallback_error: str | None = None
        # (item, {"path", "error"}) of the records a worker could not send and wrote itself.
        self.unsent: list[tuple[str, dict[str, Any]]] = []
        self.conflict: str | None = None  # one agent name with two configurations in the records
        # (item id, reason) of the items skipped (e.g. machine-track items on the local backend):
        # they have no record, so the summary would not know them.
        self.skipped: list[tuple[str, str]] = []
        # Nothing was measured: every item was skipped (the run's exit status is then 5).
        self.all_skipped = False
        self.session: pytest.Session | None = None  # set when the session finishes (for the verdict)

    def _append(self, nodeid: str, record: RunRecord) -> None:
        self.seen.add(nodeid)
        record = record.model_copy(update={"run_id": self.run_id})
        try:
            append_record(self.results_path, record)
        except OSError as exc:
            self._keep_unsaved(record, exc)
        self.finished += 1
        self.solved += record.outcome == Outcome.SUCCESS

    def _keep_unsaved(self, record: RunRecord, exc: OSError) -> None:
        """A record results.jsonl refused: never dropped, written elsewhere, reported at once."""
        self.unsaved.append(record)
        first = self.write_error is None
        self.write_error = f"{self.results_path}: {exc.strerror or exc}"
        try:
            append_record(self.fallback_path, record)
        except OSError as fallback_exc:
            self.fallback_error = f"{self.fallback_path}: {fallback_exc.strerror or fallback_exc}"
        if first:
            terminal = self.config.pluginmanager.get_plugin("terminalreporter")
            message = (f"swe-residual: cannot write {self.write_error}; records are kept in memory and "
                       f"written to {self.fallback_path}")
            if terminal is not None:
                terminal.write_line(message, red=True)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors += 1

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and report.nodeid.endswith("]") and settings_of(self.config).agents:
            self.skipped.append((_item_id(report.nodeid), _skip_reason(report)))
            return
        if report.nodeid in self.seen:
            return
        record = record_of(report)
        unsent = unsent_of(report)
        if record is not None:
            self._append(report.nodeid, record)
        elif unsent is not None:  # its worker wrote it to the fallback file: read with results.jsonl
            self.seen.add(report.nodeid)
            self.finished += 1
            self.unsent.append((report.nodeid, unsent))
        elif report.when == "???" and report.failed:
            # xdist: the worker died with this item in flight. Record it as what it is.
            crashed = self._crash_record(report)
            if crashed is not None:
                self._append(report.nodeid, crashed)

    def _crash_record(self, report: pytest.TestReport) -> RunRecord | None:
        param = _item_id(report.nodeid) if report.nodeid.endswith("]") else ""
        settings = settings_of(self.config)
        catalog = catalog_of(self.config)
        for spec in catalog.items(list(settings.agents), views=settings.handoff, rollouts=settings.rollouts):
            if spec.id == param and spec.error is None:
                task = catalog.task(spec.task_id)
                predecessor = None
                if spec.state_id is not None:
                    try:
                        predecessor = catalog.state(spec.task_id, spec.state_id).predecessor
                    except DatasetError:
                        pass  # the record still names the state; its item reports the error
                message = str(report.longrepr).strip().splitlines()[-1] if report.longrepr else "worker crashed"
                return infra_error_record(
                    self.run_id, agent_label(self.config, spec.agent), task.id, task.track, spec.state_id, predecessor,
                    f"worker crashed: {message}", handoff=spec.handoff if spec.state_id is not None else None,
                    rollout=spec.rollout_index,
                )
        return None

    def pytest_report_header(self, config: pytest.Config) -> str | None:
        # Registered on the controller only, so once per run under xdist; pytest shows the
        # header unless -q (or --no-header), which keeps quiet runs lean. Only for a run that
        # evaluates agents: other tests in the same rootdir (the project's own) have no S or u.
        settings = settings_of(config)
        if not settings.agents:
            return None
        choice = backend_choice_of(config)
        lines = [
            legend(verbose=config.get_verbosity() > 0),
            f"backend: {choice.describe()}",
            *([f"engine: {', '.join(choice.engines)}"] if choice.engines else []),
            f"dataset: {settings.dataset}",
            f"run directory: {self.run_dir}" + (" (resumed)" if settings.resume is not None else ""),
            f"agents: {', '.join(settings.agents)}",
        ]
        try:
            catalog = catalog_of(config)
        except pytest.Collector.CollectError:
            catalog = None  # a missing dataset: collection says so
        if catalog is not None:  # checked before the first item: said now, not as a late E
            lines += [f"error: {line}" for line in task_errors(catalog.task_errors)]
            lines += [f"warning: {line}" for line in
                      dataset_warnings(entry.task for entry in catalog.tasks.values())]
        if settings.shard is not None:
            k, n = settings.shard
            lines.append(f"shard: {k}/{n} (this run measures part of the dataset: merge all {n} shards with "
                         "`swe-residual report`, which applies the gates)")
        selection = selection_of(config.option.keyword, config.option.markexpr)
        if selection:
            lines.append("selection: " + ", ".join(f"{'-k' if key == 'keyword' else '-m'} {value!r}"
                                                   for key, value in selection.items())
                         + (" (kept in run.json; --resume reuses it)" if settings.resume is None else ""))
        return lines

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Any:
        record = record_of(report)
        if record is None or report.when != "call" or not report.passed:
            return None
        # How the run ended rides on the verbose word (and so on the `-rA` lines): an agent
        # that never ran is UNSOLVED like one that tried, and only the termination tells them
        # apart. During the run, so does the running success rate, for long runs.
        termination = record.termination or "unknown"
        detail = termination if self.session_done else f"{termination}; {self.solved}/{self.finished} solved so far"
        if record.outcome == Outcome.SUCCESS:
            return "passed", "S", (f"SOLVED ({detail})", {"green": True})
        markup = {"red": True} if termination == Termination.AGENT_ERROR else {"yellow": True}
        return "passed", "u", (f"UNSOLVED ({detail})", markup)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Compute the summary once and apply the gates before pytest settles its exit status."""
        self.session_done = True
        self.session = session
        interrupted = _interruption(session, self.collect_errors)
        if not self.results_path.exists() and not self.unsaved and not self.skipped and interrupted is None:
            return
        if interrupted is not None and not settings_of(self.config).agents:
            return  # not an evaluation run (the project's own tests)
        loaded = read_records([self.results_path])
        self.problems = [problem for problem in loaded.problems if not problem.startswith(f"{self.results_path}: No such")]
        # The file's records plus those it refused (also in the fallback file, which
        # read_records reads): the summary covers every finished item, each once.
        records = dedupe_records(loaded.records + self.unsaved)
        # The command line's agent order, by the names records give them.
        order = [agent_label(self.config, spec) for spec in settings_of(self.config).agents]
        resume = self._resume_command() if interrupted is not None and self.results_path.exists() else None
        try:
            summary = summarize(records, compare=True, uncertainty=settings_of(self.config).uncertainty)
        except AgentConfigConflict as exc:  # never a silent merge of two agents under one name
            self.conflict = str(exc)
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
            return
        try:
            catalog = catalog_of(self.config)
            warnings = task_errors(catalog.task_errors) + dataset_warnings(e.task for e in catalog.tasks.values())
        except pytest.Collector.CollectError:
            warnings = []
        self.terminations = termination_report(records, order=order)
        self.summary = with_never_worked(
            with_run_status(in_agent_order(summary, order), self.skipped, interrupted=interrupted,
                            resume_command=resume, warnings=warnings), self.terminations.broken)
        if records and all(record.start == Start.RESIDUAL for record in records):
            self.residual_only = len(records)
        try:
            write_summary_files(self.run_dir, self.summary, render_markdown(self.summary))
        except OSError as exc:
            self.problems.append(f"summary files not written: {exc}")
        try:  # a broken report must cost the run neither its results nor its exit status
            write_report(self.run_dir, self.summary, records)
        except Exception as exc:
            self.problems.append(f"report.html not written: {type(exc).__name__}: {exc}")
        self.gate_results = evaluate_gates(self.summary, list(settings_of(self.config).gates),
                                           on=settings_of(self.config).gate_on,
                                           min_tasks=settings_of(self.config).gate_min_tasks)
        if any(not result.passed for result in self.gate_results) and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.terminations.broken and session.exitstatus == 0:  # an agent that never worked measured nothing
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.unsaved or self.unsent:  # the results file is incomplete: the run must not look fine
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        if not records and self.skipped and interrupted is None and session.exitstatus == 0:
            # e.g. `-m machine --backend=local`: all green, and nothing measured
            self.all_skipped = True
            session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED

    def _resume_command(self) -> str:
        invocation = self.config.invocation_params
        try:
            where = str(self.run_dir.relative_to(invocation.dir))
        except ValueError:
            where = str(self.run_dir)
        return resume_command(list(invocation.args), where)

    def write_verdict(self) -> None:
        """The run's last lines (swe_residual/cli/run/verdict.py): why the exit status is what it is."""
        session = self.session
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if session is None or terminal is None or not settings_of(self.config).agents:
            return
        exit_status = int(session.exitstatus)
        other = []
        if self.summary is not None and self.summary.interrupted:
            other += interrupted_lines(self.summary)
        if self.conflict is not None:
            other.append(f"no summary: {self.conflict}")
        if self.unsaved or self.unsent:
            other.append(f"{len(self.unsaved) + len(self.unsent)} record(s) not in results.jsonl (named above)")
        if self.all_skipped:
            other.append(f"all {len(self.skipped)} item(s) were skipped")
        failed_items = int(session.testsfailed) if exit_status != pytest.ExitCode.INTERRUPTED else 0
        verdict = run_verdict(self.gate_results, self.terminations.broken, exit_status=exit_status,
                              failed_items=failed_items, other=other)
        terminal.write_line("")
        for line in verdict.lines:
            terminal.write_line(line, bold=True, red=exit_status != 0, green=exit_status == 0)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.conflict is not None:
            terminalreporter.write_line(f"error: no summary: {self.conflict}", red=True)
        if self.summary is None:
            return
        write = terminalreporter.write_line
        terminalreporter.section("SWE-Residual summary")
        summary = self.summary
        for line in interrupted_lines(summary):  # first, before figures that cover part of the run
            write(line, yellow=True)
        if self.residual_only:
            write("Residual success is reported against the same tasks' Clean Starts, and none were run.",
                  yellow=True)
            write(f"{self.residual_only} Residual State item(s) recorded; run the Clean Starts too "
                  "(e.g. -m 'clean or residual') for the table.", yellow=True)
            summary = summary.model_copy(update={"agents": {}})  # the rest of the report, without the all-dash table
        for line in render_terminal(summary):
            write(line)
        for result in self.gate_results:
            write(result.describe(), red=not result.passed, green=result.passed)
        for line in self.terminations.table:
            write(line)
        for line in self.terminations.errors:
            write(line, red=True)
        for line in self.terminations.broken:
            write(line, red=True)
        if self.all_skipped:
            write(f"error: nothing was measured: all {len(self.skipped)} item(s) were skipped (reasons above); "
                  "exit status 5", red=True)
        if self.summary.interrupted:  # again at the end, where the eye lands
            for line in interrupted_lines(self.summary):
                write(line, yellow=True)
        for problem in self.problems:
            write(f"warning: {problem}", yellow=True)
        if self.unsaved:
            where = str(self.fallback_path) if self.fallback_error is None else "the lines below"
            write(f"error: {len(self.unsaved)} record(s) could not be appended to results.jsonl "
                  f"({self.write_error}); they are in {where}", red=True)
            if self.fallback_error is not None:  # the last place left: the terminal itself
                write(f"error: the fallback file failed too ({self.fallback_error})", red=True)
                for record in self.unsaved:
                    write(record_line(record))
        for nodeid, unsent in self.unsent:
            where = unsent["path"] or "the worker's error output"
            write(f"error: {nodeid}: its worker could not send the record ({unsent['error']}); it is in {where}",
                  red=True)
        write(f"results: {self.results_path}")
        write(f"summary: {self.run_dir / 'summary.json'}, {self.run_dir / 'summary.md'}, {self.run_dir / 'report.html'}")
