"""The hidden verifier: where it runs, what it receives, how its outputs are read, and the checks around it (canary, state check)."""
