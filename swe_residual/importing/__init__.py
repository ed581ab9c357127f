"""Bringing real runs and real fixes in (`swe-residual import ...`).

- `harbor_jobs`: Harbor job directories -> Stage I candidates of the residualization pipeline
- `predictions`: SWE-bench-style prediction files -> Stage I candidates
- `commit`: a real repository's fix commit -> a Harbor task (and left-out residual states)

Each writes what the existing pipeline reads next (`residualize filter|review|build`, or
`pytest --dataset=`), with its provenance, and the same input gives byte-identical output.
"""
