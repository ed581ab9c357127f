"""One item, run: start, agent, verifier, and its run record with its trajectory; what the
agent's steps opened and inspected (steps/) and what a Residual State's agent is told of its
predecessor (handoff/)."""
