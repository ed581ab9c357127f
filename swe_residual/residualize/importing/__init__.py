"""Bringing real runs and real fixes in (`swe-residual import ...`).

- `harbor_jobs`: Harbor job directories -> Stage I candidates of the residualization pipeline
  (`harbor_layout` reads trial directories, `harbor_match` + `harbor_checksum` tell which task a
  trial ran, `atif` its trajectory, `terminus` the keystrokes a Terminus-2 trial sent)
- `predictions`: SWE-bench-style prediction files -> Stage I candidates
- `commit`: a real repository's fix commit -> a Harbor task (and left-out residual states)

Each writes what the existing pipeline reads next (`residualize filter|review|build`, or
`pytest --dataset=`), with its provenance, and the same input gives byte-identical output.
"""
