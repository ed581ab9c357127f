"""`swe-residual dataset build DIR [--fetch] [--source NAME=PATH ...] [--validate]`: argument parsing and printing."""

from __future__ import annotations

import argparse
from pathlib import Path

from swe_residual.dataset.errors import ConfigError
from swe_residual.environments.machine_trust import TRUST_HELP


def _sources(values: list[str]) -> dict[str, Path]:
    sources: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"--source {value!r}: expected NAME=PATH")
        sources[name] = Path(path)
    return sources


def _build(args: argparse.Namespace) -> int:
    from swe_residual.environments.machine_trust import choose_trust
    from swe_residual.residualize.published.materialise import build

    report = build(Path(args.dataset), _sources(args.source), validate=args.validate, backend_name=args.backend,
                   machine_trust=choose_trust(args.machine_trust, Path.cwd()), tasks=frozenset(args.task) or None,
                   runs_from=frozenset(args.runs_from) or None, fetch=args.fetch, repeats=args.repeats, record=args.record)
    for problem in report.problems:
        print(f"problem: {problem}")
    if args.validate:
        kept = len(report.validation) - len(report.problems)
        print(f"Stage IV again: {kept} of {len(report.validation)} state(s) validate as recorded")
    if args.record:
        print(f"recorded the repeated runs of {len(report.recorded)} state(s) in {Path(args.dataset) / 'manifest.toml'}"
              + "".join(f"\n  {key}" for key in report.recorded))
    return 1 if report.problems else 0


def _record(args: argparse.Namespace) -> int:
    from swe_residual.residualize.published.record import record

    print(record(Path(args.work), Path(args.built), Path(args.sources), Path(args.out), add=args.add))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("dataset", help="published datasets: rebuild one from its sources (manifest.toml)")
    commands = parser.add_subparsers(dest="dataset_command", required=True)
    build = commands.add_parser("build", help="write a published dataset's tasks and states from the "
                                              "repositories its manifest.toml names (checksums verified)")
    build.add_argument("dataset", help="the dataset directory holding manifest.toml (e.g. datasets/tb2-residual)")
    build.add_argument("--fetch", action="store_true",
                       help="clone each source not given by --source at its commit into the cache "
                            "(~/.cache/swe-residual/sources, or $SWE_RESIDUAL_CACHE/sources; shallow, reused); "
                            "git's url.<base>.insteadOf reaches a mirror")
    build.add_argument("--source", action="append", default=[], metavar="NAME=PATH",
                       help="a local clone of the manifest's source NAME (bare or not) holding its commit, "
                            "used instead of fetching it; without --fetch, one per source the build needs")
    build.add_argument("--validate", action="store_true",
                       help="then run Stage IV again on every state written (verifier fails, oracle solves, two replays "
                            "agree, replayed pane matches) and compare with the manifest; exit 1 on a difference")
    build.add_argument("--task", action="append", default=[], metavar="ID",
                       help="only this task and its states (repeatable; written, and validated with --validate), "
                            "e.g. after its image was rebuilt")
    build.add_argument("--runs-from", action="append", default=[], metavar="SOURCE",
                       help="only the states from this source of runs (repeatable) and the tasks they are on: "
                            "only the sources those need are given or fetched")
    build.add_argument("--repeats", type=int, default=3, metavar="N",
                       help="with --validate: the verifier and the oracle N times per state, all agreeing (default 3)")
    build.add_argument("--record", action="store_true",
                       help="with --validate and --repeats N >= 2: write each state's repeated runs (verifier and "
                            "oracle runs, per-test statuses, date, time, machine load) into manifest.toml as "
                            "[provenance.stage_iv.repeated], for the states found as recorded")
    build.add_argument("--backend", default="docker", help="backend for --validate (default docker)")
    build.add_argument("--machine-trust", metavar="auto|none|PATH", help=TRUST_HELP)
    build.set_defaults(func=_build)
    rec = commands.add_parser("record", help="write manifest.toml for a dataset the pipeline built from fetched "
                                             "sources (docs/datasets.md)")
    rec.add_argument("work", help="the residualize work directory (import, filter, review, build done)")
    rec.add_argument("--built", required=True, help="the dataset `residualize build --out` wrote")
    rec.add_argument("--sources", required=True, metavar="SOURCES.toml",
                     help="the repositories: [sources.NAME] repository, clone, commit, licence, tasks|runs")
    rec.add_argument("--out", required=True, help="the published dataset's directory (manifest.toml goes there)")
    rec.add_argument("--add", action="store_true",
                     help="add this source of runs to the manifest already in --out (its funnel under [funnels.<source>])")
    rec.set_defaults(func=_record)
