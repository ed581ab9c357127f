"""Residualization (paper §3.2, App. B): Stage I-IV turning predecessor runs into validated
Residual States; the runs it imports (importing/, harbor/), the datasets published from them
(published/) and the checks of a dataset (check.py).

One module per stage, each reading and writing the work directory (`workdir.py`):

    generate.py     Stage I    run predecessor agents from each Clean Start, record every run
    filter.py       Stage II   rule-based filter: submitted but failing, changed, no infra failure, no duplicate
    review.py       Stage III  review packets two people edit; collect their decisions
    reconstruct.py  Stage IV   rebuild, check usable, verify still failing; write the output dataset, Table 5
    stats.py        Table 2 / Appendix A figures of any dataset

`predecessors.py` makes scripted predecessors runnable as agents (`script:DIR`);
`recording.py` records a machine-track run's terminal interactions as it happens.
"""
