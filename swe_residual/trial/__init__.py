"""One item, run: start, agent, verifier, and its run record with its trajectory."""
