"""`swe-residual review WORKDIR ...` (also `swe-residual residualize review`): Stage III's
arguments and what each does; the work is in review.py, review_page.py, review_machine.py and
review_record.py."""

from __future__ import annotations

import argparse
import sys


def add_review_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workdir")
    parser.add_argument("--summarizer", metavar="CMD",
                        help="a command printing a summary of the trajectory JSON on stdin (run once per candidate)")
    parser.add_argument("--replay", action="store_true",
                        help="machine track: replay each candidate in a container (docker) and show the files, "
                             "packages and processes it changed")
    parser.add_argument("--record", metavar="TASK/CANDIDATE", help="record one reviewer's verdict on a candidate")
    parser.add_argument("--reviewer", metavar="NAME", help="with --record: who gives the verdict")
    parser.add_argument("--task-directed", choices=("yes", "no"), help="with --record: the work attempts the request")
    parser.add_argument("--consistent", choices=("yes", "no"),
                        help="with --record: the request and the hidden tests ask for the same thing")
    parser.add_argument("--independent", choices=("yes", "no"),
                        help="with --record: the reviewer read the candidate without seeing the other reviewer's "
                             "verdict (yes) or saw it (no); left out, it is recorded as unknown")
    parser.add_argument("--collect", action="store_true", help="read the decisions back (undecided packets block)")
    parser.add_argument("--accept-all-as", metavar="NAME",
                        help="scripted pipelines: accept every undecided packet under NAME (recorded in provenance)")
    parser.set_defaults(func=run_review)


def run_review(args: argparse.Namespace) -> int:
    from swe_residual.dataset.errors import ConfigError
    from swe_residual.residualize.review import ReviewIncomplete, collect, write_packets
    from swe_residual.residualize.review_page import write_pages

    if args.record:
        from swe_residual.residualize.review_record import record_verdict

        if not (args.reviewer and args.task_directed and args.consistent):
            raise ConfigError("--record needs --reviewer NAME, --task-directed yes|no and --consistent yes|no")
        independent = args.independent or "unknown"
        ref, slot = record_verdict(args.workdir, args.record, args.reviewer, task_directed=args.task_directed,
                                   consistent=args.consistent, independent=independent)
        print(f"{ref.task}/{ref.candidate}: {args.reviewer} ({slot}) task_directed={args.task_directed} "
              f"consistent={args.consistent} independent={independent}")
        write_pages(args.workdir)
        return 0
    write_packets(args.workdir, summarizer=args.summarizer)
    if args.replay:
        from swe_residual.residualize.review_machine import replay_candidates

        replay_candidates(args.workdir)
    status = 0
    if args.collect or args.accept_all_as:
        try:
            collect(args.workdir, accept_all_as=args.accept_all_as)
        except ReviewIncomplete as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 3
    write_pages(args.workdir)  # after collect: they show the answers --accept-all-as wrote
    if not (args.collect or args.accept_all_as):
        print("record each reviewer's verdict (`--record TASK/CANDIDATE --reviewer NAME --task-directed yes|no "
              "--consistent yes|no`, or the packets' decision lines), then run with --collect")
    return status
