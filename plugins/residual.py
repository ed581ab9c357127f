"""The SWE-Residual pytest plugin: options, one item per start, run records, the summary.

Shaped like pytest's junitxml: the reporter keeps its state under a StashKey and is
registered on the controller only; workers send each item's run record to it on the test
report (`user_properties`), where it is appended to `results.jsonl` at once. The summary
is computed once, from the results file, at the end of the session.
"""

from __future__ import annotations

import json
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from plugins.context import (
    RECORD_PROPERTY, catalog_of, finished_key, run_dir_key, settings_key, settings_of, skip_reasons,
)
from swe_residual.agents import resolve_agent
from swe_residual.dataset_check import not_a_dataset
from swe_residual.errors import ConfigError, DatasetError
from swe_residual.gates import GateResult, evaluate_gates, parse_gate
from swe_residual.items import ItemSpec
from swe_residual.records import append_record, infra_error_record, item_key, read_records
from swe_residual.report_html import write_report
from swe_residual.resume import prepare_resume
from swe_residual.settings import (
    WATCHDOG_MARGIN_SEC, RunSettings, parse_backend, parse_model, parse_non_negative_int, parse_positive_float,
    parse_positive_int, resolve, resolve_agent_options,
)
from swe_residual.sharding import assign_tasks, parse_shard
from swe_residual.summary import build_summary, render_markdown, render_terminal
from swe_residual.summary_files import write_summary_files

reporter_key = pytest.StashKey["ResidualReporter"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("swe-residual", "SWE-Residual evaluation")
    group.addoption("--agent", action="append", default=[], metavar="NAME",
                    help="agent to evaluate (repeatable): noop, oracle, cmd:<command>, module:<module>:<Class>")
    group.addoption("--dataset", default=None, metavar="PATH", help="dataset directory (default: datasets/sample)")
    group.addoption("--backend", default=None, help="environment backend: auto (docker when an engine answers), local, docker")
    group.addoption("--infra-retries", default=None, metavar="N", help="retries after an infrastructure failure (default 2)")
    group.addoption("--results-dir", default=None, metavar="DIR", help="where run directories go (default: reports)")
    group.addoption("--run-id", default=None, help="name of this run's directory under --results-dir")
    group.addoption("--timeout-multiplier", default=None, metavar="X", help="multiplies each task's agent timeout")
    group.addoption("--max-steps", default=None, metavar="N", help="step limit per run (same for every start)")
    group.addoption("--cost-limit", default=None, metavar="USD", help="cost limit per run (same for every start)")
    group.addoption("--watchdog-margin", default=None, metavar="SEC",
                    help="per-item watchdog (pytest-timeout): agent budget + verifier timeout + this margin "
                         f"(default {WATCHDOG_MARGIN_SEC:g})")
    group.addoption("--model", default=None, metavar="NAME",
                    help="model for agents that take one (mini-swe-agent: any name its model layer knows)")
    group.addoption("--agent-option", action="append", default=[], metavar="KEY=VALUE",
                    help="an agent option (repeatable), e.g. script=FILE, config=swebench.yaml, env=NAME")
    group.addoption("--shard", default=None, metavar="K/N",
                    help="run shard K of N (all items of a task in one shard); merge with `swe-residual report`")
    group.addoption("--resume", default=None, metavar="RUN_DIR",
                    help="continue an interrupted run: finished items are reused, the rest run")
    group.addoption("--residual-fail-under", action="append", default=[], metavar="[TRACK:]PCT",
                    help="fail the run when an agent's Residual success is below PCT (overall, or one track)")
    group.addoption("--gap-fail-over", action="append", default=[], metavar="[TRACK:]POINTS",
                    help="fail the run when an agent's Gap is above POINTS (overall, or one track)")
    parser.addini("residual_agents", "agents to evaluate when --agent is not given", type="args", default=[])
    parser.addini("residual_dataset", "dataset directory", default="")
    parser.addini("residual_backend", "environment backend", default="")
    parser.addini("residual_infra_retries", "retries after an infrastructure failure", default="")
    parser.addini("residual_results_dir", "where run directories go", default="")
    parser.addini("residual_timeout_multiplier", "multiplies each task's agent timeout", default="")
    parser.addini("residual_max_steps", "step limit per run", default="")
    parser.addini("residual_cost_limit", "cost limit per run", default="")
    parser.addini("residual_watchdog_margin", "seconds the per-item watchdog allows beyond budget and verifier",
                  default="")
    parser.addini("residual_model", "model for agents that take one", default="")
    parser.addini("residual_agent_options", "agent options, one KEY=VALUE per line", type="linelist", default=[])


def _settings(config: pytest.Config) -> RunSettings:
    def value(flag: str, ini: str, default: Any, parse: Any) -> Any:
        return resolve(flag.lstrip("-"), config.getoption(flag.lstrip("-").replace("-", "_")), config.getini(ini),
                       default, parse, cli_flag=flag, ini_name=ini)

    root = config.rootpath
    agents = tuple(config.getoption("agent") or config.getini("residual_agents") or ())
    return RunSettings(
        agents=agents,
        dataset=value("--dataset", "residual_dataset", root / "datasets" / "sample", lambda t: (root / t).resolve()),
        backend=value("--backend", "residual_backend", "auto", parse_backend),
        infra_retries=value("--infra-retries", "residual_infra_retries", 2, parse_non_negative_int),
        results_dir=value("--results-dir", "residual_results_dir", root / "reports", lambda t: (root / t).resolve()),
        run_id=config.getoption("run_id"),
        timeout_multiplier=value("--timeout-multiplier", "residual_timeout_multiplier", 1.0, parse_positive_float),
        max_steps=value("--max-steps", "residual_max_steps", None, parse_positive_int),
        cost_limit=value("--cost-limit", "residual_cost_limit", None, parse_positive_float),
        watchdog_margin=value("--watchdog-margin", "residual_watchdog_margin", WATCHDOG_MARGIN_SEC,
                              parse_positive_float),
        model=value("--model", "residual_model", None, parse_model),
        agent_options=resolve_agent_options(config.getoption("agent_option"), config.getini("residual_agent_options")),
        shard=parse_shard(config.getoption("shard")) if config.getoption("shard") else None,
        resume=(Path(config.getoption("resume")).resolve() if config.getoption("resume") else None),
        gates=tuple(
            [parse_gate("residual_fail_under", v) for v in config.getoption("residual_fail_under")]
            + [parse_gate("gap_fail_over", v) for v in config.getoption("gap_fail_over")]
        ),
    )


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    for name in ("clean", "residual", "repo", "machine"):
        config.addinivalue_line("markers", f"{name}: SWE-Residual item kind")
    try:
        settings = _settings(config)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from exc
    config.stash[settings_key] = settings
    # An empty directory, or one without a task, would collect no item and end obscurely: say
    # so now. A missing directory is reported at collection (plugins/context.py).
    if settings.dataset.is_dir():
        problem = not_a_dataset(settings.dataset)
        if problem is not None:
            raise pytest.UsageError(f"--dataset: {problem}")
    for agent in settings.agents:
        try:
            # a typo in --agent (or a bad model, config or script) is a usage error before anything runs
            resolve_agent(agent, dict(settings.agent_options), settings.model)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from exc
    if _is_worker(config):
        workerinput = config.workerinput  # type: ignore[attr-defined]
        config.stash[run_dir_key] = Path(workerinput["swe_residual_run_dir"])
        config.stash[finished_key] = {tuple(key) for key in workerinput["swe_residual_finished"]}
        return
    if settings.resume is not None:
        if not (settings.resume / "results.jsonl").is_file():
            raise pytest.UsageError(f"--resume={settings.resume}: no results.jsonl there to resume")
        config.stash[run_dir_key] = settings.resume
        config.stash[finished_key] = prepare_resume(settings.resume / "results.jsonl")
    else:
        run_id = settings.run_id or time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
        config.stash[run_dir_key] = settings.results_dir / run_id
        config.stash[finished_key] = set()
    reporter = ResidualReporter(config, config.stash[run_dir_key].name)
    config.stash[reporter_key] = reporter
    config.pluginmanager.register(reporter, "swe-residual-reporter")


def pytest_unconfigure(config: pytest.Config) -> None:
    reporter = config.stash.get(reporter_key, None)
    if reporter is not None:
        del config.stash[reporter_key]
        config.pluginmanager.unregister(reporter)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: every worker writes trajectories into the controller's run directory."""
    node.workerinput["swe_residual_run_dir"] = str(node.config.stash[run_dir_key])
    node.workerinput["swe_residual_finished"] = [list(key) for key in sorted(node.config.stash[finished_key], key=str)]


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
        elif spec is not None and spec.error is None and item_key(spec.agent, spec.track, spec.task_id, spec.start, spec.state_id) in finished:
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
            "no agent to evaluate: pass --agent=NAME (noop, oracle, cmd:<command>, module:<module>:<Class>), "
            "or set residual_agents in the ini file"
        )
    catalog = catalog_of(config)
    watchdog = config.pluginmanager.hasplugin("timeout")  # pytest-timeout, unless disabled with -p no:timeout
    # Items share a handful of mark combinations: one tuple each, not thousands of equal objects.
    marks_cache: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    params = []
    for spec in catalog.items(list(settings.agents), skip_reasons(config)):
        timeout = None
        if watchdog and spec.error is None:
            task = catalog.task(spec.task_id)
            timeout = settings.item_timeout(task.config.agent_timeout_sec, task.config.verifier_timeout_sec)
        key = (spec.error is None, spec.start, spec.track, spec.skip_reason, timeout)
        marks = marks_cache.get(key)
        if marks is None:
            marks = marks_cache[key] = _marks(spec, timeout)
        params.append(pytest.param(spec, id=spec.id, marks=marks))
    metafunc.parametrize("residual_item", params)


def _marks(spec: ItemSpec, timeout: float | None) -> tuple[Any, ...]:
    marks: list[Any] = []
    if spec.error is None:
        marks += [getattr(pytest.mark, spec.start), getattr(pytest.mark, spec.track)]
    if timeout is not None:
        # The watchdog covers the whole item (the work is in a fixture), whatever the ini's
        # timeout_func_only says; the runner stops the agent itself at its budget, so this
        # only fires when the harness around it hangs.
        marks.append(pytest.mark.timeout(timeout, func_only=False))
    if spec.skip_reason:
        marks.append(pytest.mark.skip(reason=spec.skip_reason))
    return tuple(marks)


def record_of(report: pytest.TestReport) -> dict[str, Any] | None:
    for name, value in getattr(report, "user_properties", ()):  # a CollectReport has none
        if name == RECORD_PROPERTY:
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
        self.finished = 0
        self.solved = 0
        self.summary: dict[str, Any] | None = None
        self.gate_results: list[GateResult] = []
        # Residual State records, when no Clean Start ran at all (e.g. `-m residual`): the
        # headline table compares against the same tasks' Clean Starts, so it would be all dashes.
        self.residual_only = 0
        self.problems: list[str] = []
        # Records that could not be appended to results.jsonl (a read-only or full disk): kept
        # here for the summary, written to `fallback_path`, and the run ends non-zero.
        self.unsaved: list[dict[str, Any]] = []
        self.write_error: str | None = None
        self.fallback_path = Path(tempfile.gettempdir()) / f"swe-residual-{run_id}.unsaved.jsonl"
        self.fallback_error: str | None = None

    def _append(self, nodeid: str, record: dict[str, Any]) -> None:
        self.seen.add(nodeid)
        record = {**record, "run_id": self.run_id}
        try:
            append_record(self.results_path, record)
        except OSError as exc:
            self._keep_unsaved(record, exc)
        self.finished += 1
        self.solved += record["outcome"] == "success"

    def _keep_unsaved(self, record: dict[str, Any], exc: OSError) -> None:
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

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.nodeid in self.seen:
            return
        record = record_of(report)
        if record is not None:
            self._append(report.nodeid, record)
        elif report.when == "???" and report.failed:
            # xdist: the worker died with this item in flight. Record it as what it is.
            crashed = self._crash_record(report)
            if crashed is not None:
                self._append(report.nodeid, crashed)

    def _crash_record(self, report: pytest.TestReport) -> dict[str, Any] | None:
        param = report.nodeid[report.nodeid.find("[") + 1 : -1] if report.nodeid.endswith("]") else ""
        settings = settings_of(self.config)
        catalog = catalog_of(self.config)
        for spec in catalog.items(list(settings.agents)):
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
                    self.run_id, spec.agent, task.id, task.track, spec.state_id, predecessor,
                    f"worker crashed: {message}",
                )
        return None

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Any:
        record = record_of(report)
        if record is None or report.when != "call" or not report.passed:
            return None
        # Progress for long runs: the running success rate rides on the verbose word.
        progress = f" ({self.solved}/{self.finished} solved so far)"
        if record["outcome"] == "success":
            return "passed", "S", ("SOLVED" + progress, {"green": True})
        return "passed", "u", ("UNSOLVED" + progress, {"yellow": True})

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Compute the summary once and apply the gates before pytest settles its exit status."""
        if not self.results_path.exists() and not self.unsaved:
            return
        loaded = read_records([self.results_path]) if self.results_path.exists() else None
        self.problems = loaded.problems if loaded is not None else []
        # The file's records plus those it refused: the summary covers every finished item.
        records = (loaded.records if loaded is not None else []) + self.unsaved
        self.summary = build_summary(records, compare=True)
        if records and all(record.get("start") == "residual" for record in records):
            self.residual_only = len(records)
        try:
            write_summary_files(self.run_dir, self.summary, render_markdown(self.summary))
        except OSError as exc:
            self.problems.append(f"summary files not written: {exc}")
        try:  # a broken report must cost the run neither its results nor its exit status
            write_report(self.run_dir, self.summary, records)
        except Exception as exc:
            self.problems.append(f"report.html not written: {type(exc).__name__}: {exc}")
        self.gate_results = evaluate_gates(self.summary, list(settings_of(self.config).gates))
        if any(not result.passed for result in self.gate_results) and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.unsaved:  # the results file is incomplete: the run must not look fine
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.summary is None:
            return
        write = terminalreporter.write_line
        terminalreporter.section("SWE-Residual summary")
        summary = self.summary
        if self.residual_only:
            write("Residual success is reported against the same tasks' Clean Starts, and none were run.",
                  yellow=True)
            write(f"{self.residual_only} Residual State item(s) recorded; run the Clean Starts too "
                  "(e.g. -m 'clean or residual') for the table.", yellow=True)
            summary = {**summary, "agents": {}}  # the rest of the report, without the all-dash table
        for line in render_terminal(summary):
            write(line)
        for result in self.gate_results:
            write(result.describe(), red=not result.passed, green=result.passed)
        for problem in self.problems:
            write(f"warning: {problem}", yellow=True)
        if self.unsaved:
            where = str(self.fallback_path) if self.fallback_error is None else "the lines below"
            write(f"error: {len(self.unsaved)} record(s) could not be appended to results.jsonl "
                  f"({self.write_error}); they are in {where}", red=True)
            if self.fallback_error is not None:  # the last place left: the terminal itself
                write(f"error: the fallback file failed too ({self.fallback_error})", red=True)
                for record in self.unsaved:
                    write(json.dumps(record, ensure_ascii=True))
        write(f"results: {self.results_path}")
        write(f"summary: {self.run_dir / 'summary.json'}, {self.run_dir / 'summary.md'}, {self.run_dir / 'report.html'}")
