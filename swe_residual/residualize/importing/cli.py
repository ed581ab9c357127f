"""`swe-residual import harbor-jobs|terminal-bench|predictions|deepswe-trials|codex-runs|pi-runs|commit`:
one subcommand per source.

Each source module owns its arguments and its command (`register(subparsers)`).
"""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from swe_residual.residualize.harbor import jobs as harbor_jobs
    from swe_residual.residualize.importing import (codex_runs, commit, deepswe_trials, pi_runs, predictions,
                                                    terminal_bench)

    parser = sub.add_parser("import", help="bring real runs and fixes in: Harbor jobs, Terminal-Bench runs, prediction files, "
                                   "DeepSWE trials, Codex and pi run folders, fix commits")
    sources = parser.add_subparsers(dest="source", required=True)
    harbor_jobs.register(sources)
    terminal_bench.register(sources)
    predictions.register(sources)
    deepswe_trials.register(sources)
    codex_runs.register(sources)
    pi_runs.register(sources)
    commit.register(sources)
