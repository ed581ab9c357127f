"""The `swe-residual` command: everything that does not need pytest.

    swe-residual report RESULTS... [--out DIR]   recompute the summary from results files
    swe-residual validate DATASET [--verify]     check a dataset's tasks, states and patches
    swe-residual build-base [--rebuild] [--release R] [--python X.Y]  build the Debian base image for the docker backend
    swe-residual images list|prune [--all]       list or prune the docker backend's cached images
    swe-residual setup harbor                    Harbor in its own Python >= 3.12 environment (--agent=harbor:NAME)
    swe-residual import SOURCE ...               Harbor jobs, prediction files or fix commits in (docs/importing.md)
    swe-residual residualize STAGE ...           build Residual States (generate, filter, review, build)
    swe-residual review WORKDIR ...              Stage III: review pages, reviewers' verdicts (--record), --collect
    swe-residual stats DATASET                   Table 2 / Appendix A statistics of a dataset
"""

from __future__ import annotations

import argparse
import secrets
import sys
from pathlib import Path

from swe_residual import __version__
from swe_residual.dataset.load import Dataset, load_dataset
from swe_residual.dataset.errors import DatasetError, SuiteError
from swe_residual.environments.backends import backend_argument
from swe_residual.metrics.intervals import Uncertainty
from swe_residual.run.finish import GateSettings, finish_run
from swe_residual.run.gates import parse_gate
from swe_residual.run.settings import BY_FLAG, resolve_setting
from swe_residual.run.shard_check import agent_order, check_shards, missing_lines, read_inputs
from swe_residual.trial.records import LoadedRecords, append_record, read_records
from swe_residual.report.status import partial_text
from swe_residual.run.verdict import run_verdict
from swe_residual.report.sections import MAKE_STATES
from swe_residual.metrics.summary.model import read_summary
from swe_residual.report.terminal import render_terminal


def _default_out(paths: list[Path]) -> Path:
    if len(paths) == 1:
        only = paths[0]
        return only if only.is_dir() else only.parent
    return Path("reports") / "merged"


#: the report's options that are run settings too: (flag, argparse dest, Uncertainty field)
UNCERTAINTY_OPTIONS = (("--confidence", "confidence", "confidence"),
                       ("--bootstrap-resamples", "bootstrap_resamples", "resamples"),
                       ("--bootstrap-seed", "bootstrap_seed", "seed"))


def _recorded_uncertainty(paths: list[Path]) -> Uncertainty | None:
    """The `uncertainty` of the first summary.json beside the inputs (a run's, or a report's
    written before): recomputing a summary keeps its bounds unless an option says otherwise."""
    for path in paths:
        summary = (path if path.is_dir() else path.parent) / "summary.json"
        try:
            recorded = read_summary(summary).uncertainty
        except (OSError, ValueError):  # no summary there, or not one (pydantic's ValidationError is a ValueError)
            continue
        if recorded is not None:
            return recorded
    return None


def _uncertainty(args: argparse.Namespace, paths: list[Path]) -> Uncertainty:
    """The command line's options, each parsed and checked as the run's setting is, else the
    recorded summary's, else the defaults."""
    base = _recorded_uncertainty(paths) or Uncertainty()
    values = {name: resolve_setting(BY_FLAG[flag], getattr(args, dest), None) if getattr(args, dest) is not None
              else getattr(base, name) for flag, dest, name in UNCERTAINTY_OPTIONS}
    return Uncertainty(**values)


def _read_results(paths: list[Path]) -> tuple[LoadedRecords, list[Path]]:
    """The records of the results files (or run directories), as `read_records` reads them, and
    the directory each came from: report.html links its trajectory and verifier log from there."""
    loaded, directories = LoadedRecords(), []
    for path in paths:
        one = read_records([path])
        loaded.records += one.records
        loaded.problems += one.problems
        loaded.sources += one.sources
        directories += [path if path.is_dir() else path.parent] * len(one.records)
    return loaded, directories


def cmd_report(args: argparse.Namespace) -> int:
    # A bad gate or interval value is an error before any file is read or written.
    gates = [parse_gate("residual_fail_under", v) for v in args.residual_fail_under]
    gates += [parse_gate("gap_fail_over", v) for v in args.gap_fail_over]
    gate_on = resolve_setting(BY_FLAG["--gate-on"], args.gate_on, None)
    gate_min_tasks = resolve_setting(BY_FLAG["--gate-min-tasks"], args.gate_min_tasks, None)
    for flag, dest, _ in UNCERTAINTY_OPTIONS:
        if getattr(args, dest) is not None:
            resolve_setting(BY_FLAG[flag], getattr(args, dest), None)
    paths = [Path(p) for p in args.results]
    if args.harbor_jobs:
        paths.append(_harbor_results(args))
    elif not paths:
        print("error: give results files or run directories, or --harbor-jobs JOBS_DIR", file=sys.stderr)
        return 2
    shards = check_shards(read_inputs(paths))
    refusals = shards.refusals + ([] if args.allow_partial else missing_lines(shards))
    if refusals:  # before anything is written: no summary of a merge that means nothing
        for refusal in refusals:
            print(f"error: {refusal}", file=sys.stderr)
        if shards.missing and not args.allow_partial and not shards.refusals:
            print("error: merge every shard, or give --allow-partial for a summary marked partial", file=sys.stderr)
        return 2
    loaded, directories = _read_results(paths)
    for problem in loaded.problems:
        print(f"warning: {problem}", file=sys.stderr)
    if not loaded.records:
        print("error: no run records found in " + ", ".join(map(str, paths)), file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else _default_out(paths)
    uncertainty = _uncertainty(args, [*paths, out])
    records = loaded.records  # the results files' records, read once
    # diffs/ beside it; trajectories linked relative to each results file's directory
    finished = finish_run(out, records, order=agent_order(read_inputs(paths)), uncertainty=uncertainty,
                          gates=GateSettings(tuple(gates), gate_on, gate_min_tasks), sources=loaded.sources,
                          partial=shards.partial(), record_dirs=directories)
    if finished.problems or finished.report is None:
        for problem in finished.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 1
    summary, terminations, results, report = finished.summary, finished.terminations, finished.gate_results, finished.report
    for line in render_terminal(summary):
        print(line)
    for line in [*terminations.table, *terminations.items, *terminations.errors, *terminations.broken]:
        print(line)
    print(f"summary: {out / 'summary.json'}, {out / 'summary.md'}, {report}")
    for result in results:
        print(result.describe())
    verdict = run_verdict(results, terminations.broken, exit_status=1 if terminations.broken or any(
        not result.passed for result in results) else 0, partial=partial_text(summary))
    for line in verdict.lines:  # last: what a CI log shows first is its end
        print(line)
    return verdict.exit_status


def _harbor_results(args: argparse.Namespace) -> Path:
    """Harbor's trials of exported starts as run records in `<out>/results.jsonl` (replaced)."""
    from swe_residual.residualize.harbor.results import read_harbor_results

    jobs = Path(args.harbor_jobs)
    if not jobs.is_dir():
        raise SuiteError(f"--harbor-jobs {jobs}: no such directory")
    out = Path(args.out) if args.out else Path("reports") / f"harbor-{jobs.resolve().name}"
    read = read_harbor_results(jobs, [Path(p) for p in args.harbor_export], run_id=out.name, run_dir=out)
    for problem in read.problems:
        print(f"warning: {problem}", file=sys.stderr)
    if not read.records:  # nothing to read into anything: say so, and write nothing
        raise SuiteError(f"--harbor-jobs {jobs}: no trial of an exported task found there "
                         f"({len(read.problems)} problem(s) above)" if read.problems else
                         f"--harbor-jobs {jobs}: no Harbor trial found there (a job directory holds "
                         "<trial>/result.json files)")
    results = out / "results.jsonl"
    results.unlink(missing_ok=True)
    for record in read.records:
        append_record(results, record)
    print(f"{len(read.records)} Harbor trial(s) read as run records into {results}")
    return results


def cmd_validate(args: argparse.Namespace) -> int:
    from swe_residual.residualize.check import (
        PROBLEM,
        check_patches,
        grading_warnings,
        task_settings,
        verify_task,
    )

    from swe_residual.dataset.load import not_a_dataset

    root = Path(args.dataset)
    dataset = load_dataset(root)  # a missing directory: DatasetError, exit 2
    problems = 0
    shape = not_a_dataset(root)
    if shape is not None:
        print(f"error: {shape}")
        problems += 1
    for name, error in dataset.task_errors:
        print(f"error: task {name}: {error}")
        problems += 1
    backend = None
    run_id = f"validate-{secrets.token_hex(3)}"  # labels what --verify starts
    if args.verify:
        from swe_residual.environments.registry import make_backend

        backend = make_backend(args.backend, run_id)
    try:
        for entry in dataset.entries:
            task = entry.task
            missing = task.missing_files()
            for name, error in entry.state_errors:
                print(f"error: state {task.id}/{name}: {error}")
                problems += 1
            findings = check_patches(task, entry.states)
            if backend is not None:
                findings += verify_task(backend, task, entry.states, run_id)
            # "ok" only for a task with no error of its own: not before its problems are known
            errors = len(entry.state_errors) + bool(missing) + sum(f.status == PROBLEM for f in findings)
            if missing:
                status = "incomplete, lacks " + ", ".join(missing)
            else:
                status = f"{errors} error(s)" if errors else "ok"
                if not entry.states and not entry.state_errors:  # valid, and measures its Clean Start alone
                    status += ", no Residual State (Clean Start only)"
            problems += bool(missing) + sum(f.status == PROBLEM for f in findings)
            print(f"{task.id}: track {task.track}, {len(entry.states)} state(s), {status}")
            for line in task_settings(task):
                print(f"  {line}")
            for warning in [*task.config.warnings, *grading_warnings(task)]:  # as `harbor lint` reports them: not errors
                print(f"  warning: {warning}")
            for finding in findings:
                print(f"  {finding.line()}")
    finally:
        if backend is not None:
            backend.close()
    for line in _without_states(dataset):
        print(line)
    print(f"{len(dataset.entries)} task(s), {dataset.n_states} state(s), {problems} problem(s)")
    return 1 if problems else 0


def _without_states(dataset: Dataset) -> list[str]:
    """What `validate` says of a dataset whose tasks (some or all) have no Residual State: not a
    problem (a run still measures their Clean Starts), but never an "ok" said silently."""
    bare = [entry.task.id for entry in dataset.entries if not entry.states and not entry.state_errors]
    if not bare:
        return []
    if len(bare) == len(dataset.entries):
        said = ("note: the dataset has no Residual States: a run measures the Clean rate over its Clean Starts "
                "alone (no Residual, Gap or CondFail)")
    else:
        named = ", ".join(bare[:6]) + (f" and {len(bare) - 6} more" if len(bare) > 6 else "")
        said = (f"note: {len(bare)} of {len(dataset.entries)} task(s) have no Residual State ({named}): a run "
                "measures their Clean Starts alone, outside Residual, Gap and CondFail")
    return [said, *(f"  {line}" for line in MAKE_STATES.split("\n"))]


def cmd_build_base(args: argparse.Namespace) -> int:
    from swe_residual.environments.docker.base_image import BASE_RELEASE, ensure_base_image

    release = args.release or BASE_RELEASE
    from swe_residual.environments.docker.ubuntu_image import ensure_ubuntu_image, image_for_release, is_ubuntu_release

    if is_ubuntu_release(release):
        if args.python:
            print("--python: a compiled Python is built on a Debian release (bookworm, trixie), not on Ubuntu",
                  file=sys.stderr)
            return 2
        reference = image_for_release(release).reference
        print(ensure_ubuntu_image(reference, mirror=args.mirror, keyring=args.keyring, rebuild=args.rebuild))
        return 0
    if args.mirror or args.keyring:
        print("--mirror and --keyring are for an Ubuntu release (noble, jammy): a Debian release's mirror is read "
              "from this machine's apt configuration", file=sys.stderr)
        return 2
    if args.python:
        from swe_residual.environments.docker.python_image import ensure_python_image

        print(ensure_python_image(args.python, release=release, rebuild=args.rebuild))
        return 0
    tag = ensure_base_image(rebuild=args.rebuild, release=release)
    print(tag)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="swe-residual", description="SWE-Residual: Starting-State Robustness of coding agents")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    report = sub.add_parser("report", help="recompute the summary from results.jsonl files (merges shards)")
    report.add_argument("results", nargs="*", help="results.jsonl files or run directories")
    report.add_argument("--harbor-jobs", metavar="JOBS_DIR",
                        help="read Harbor's trials of tasks made by `swe-residual export harbor` as run records")
    report.add_argument("--harbor-export", action="append", default=[], metavar="DIR",
                        help="where the exported tasks are, when the trials' task paths do not lead there")
    report.add_argument("--out", metavar="DIR",
                        help="directory to write summary.json, summary.md, report.html and diffs/ into (with "
                             "--harbor-jobs also the trials' results.jsonl); default: the run directory of a "
                             "single input, reports/merged for several, reports/harbor-<JOBS> for --harbor-jobs")
    report.add_argument("--allow-partial", action="store_true",
                        help="merge the shards given even when some of the run's shards are missing; the summary "
                             "is marked partial in summary.json, summary.md, the terminal and report.html (a "
                             "doubled or foreign shard is refused all the same)")
    report.add_argument("--residual-fail-under", action="append", default=[], metavar="[TRACK:]PCT",
                        help="exit 1 when an agent's Residual success is below PCT")
    report.add_argument("--gap-fail-over", action="append", default=[], metavar="[TRACK:]POINTS",
                        help="exit 1 when an agent's Gap is above POINTS")
    for flag in ("--gate-on", "--gate-min-tasks", *(flag for flag, _, _ in UNCERTAINTY_OPTIONS)):
        setting = BY_FLAG[flag]  # the run's setting: one help, one parser, one default
        default = "" if flag.startswith("--gate-") else " (given none: the value in a summary.json beside the inputs)"
        report.add_argument(flag, metavar=setting.metavar, help=setting.help + default)
    report.set_defaults(func=cmd_report)
    validate = sub.add_parser("validate", help="check a dataset's tasks and states before it runs")
    validate.add_argument("dataset")
    validate.add_argument("--verify", action="store_true",
                          help="also run the verifier on each task's base and each state (they must fail, "
                               "with the statuses state.toml records)")
    validate.add_argument("--backend", default="auto", type=backend_argument,
                          help="backend for --verify: auto, or a row of the backends table (default auto)")
    validate.set_defaults(func=cmd_validate)
    base = sub.add_parser("build-base", help="build the base image: the sample tasks' first lines on debian:bookworm-slim "
                          "(pulled, else, where no registry answers, its stand-in made by debootstrap as root)")
    base.add_argument("--rebuild", action="store_true", help="rebuild even if a current image exists")
    base.add_argument("--release", metavar="RELEASE",
                      help="Debian release to bootstrap, tagged swe-residual-base:RELEASE (default: the sample "
                           "tasks' bookworm; trixie for scripts/rebuild-task-image's Python 3.13 stand-in); or an "
                           "Ubuntu release (noble, jammy): ubuntu:24.04 / ubuntu:22.04, pulled, else its stand-in")
    base.add_argument("--mirror", metavar="URL",
                      help="with an Ubuntu --release (noble, jammy): the Ubuntu archive mirror its stand-in for "
                           "ubuntu:24.04 / ubuntu:22.04 is bootstrapped from and keeps in its apt sources (default: "
                           "SWE_RESIDUAL_UBUNTU_MIRROR, else this machine's apt source for that suite)")
    base.add_argument("--keyring", metavar="FILE",
                      help="with an Ubuntu --release: the keyring that verifies that mirror (default: "
                           "/usr/share/keyrings/ubuntu-archive-keyring.gpg, an Ubuntu machine's)")
    base.add_argument("--python", metavar="X.Y",
                      help="instead: CPython X.Y compiled from the upstream tarball of Debian's source package "
                           "pythonX.Y on swe-residual-base:RELEASE, tagged swe-residual-python:X.Y-RELEASE "
                           "(scripts/rebuild-task-image's stand-in for python:X.Y-slim-RELEASE; --rebuild "
                           "rebuilds this image, not the base)")
    base.set_defaults(func=cmd_build_base)
    from swe_residual.cli.images import add_parser as add_images_parser

    add_images_parser(sub)  # `images list|prune`
    from swe_residual.cli.setup import add_parser as add_setup_parser

    add_setup_parser(sub)  # `setup harbor`
    from swe_residual.residualize.importing.cli import add_parser as add_import_parser

    add_import_parser(sub)  # `import harbor-jobs|predictions|commit`
    from swe_residual.residualize.cli import add_parsers as add_residualize_parsers

    add_residualize_parsers(sub)  # `residualize generate|filter|review|build|checkpoints`, `stats`
    from swe_residual.residualize.harbor.export import add_parser as add_export_parser
    add_export_parser(sub)  # `export harbor`
    from swe_residual.residualize.published.cli import add_parser as add_dataset_parser

    add_dataset_parser(sub)  # `dataset build`
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (SuiteError, DatasetError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
