"""Handing a handoff view to the agent, and taking it back before anything is graded.

A non-blind view reaches the agent as one file in the environment's scratch directory
(`/tmp/swe-residual/handoff.md` in a container, `<workspace>/scratch/handoff.md` on the local
backend): outside the repository, so never in the final patch, and never part of a state's
snapshot. One sentence appended to the request names it. When the agent stops, the runner
removes the file, before the patch is taken, the collect steps run and the verifier starts
(also in `shared` mode, where the verifier runs in the agent's environment); a separate
verifier never had it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from swe_residual.environments.base import Environment
from swe_residual.dataset.errors import DatasetError, InfraError
from swe_residual.trial.handoff.views import BLIND, render
from swe_residual.dataset.states.state import ResidualState

HANDOFF_FILE = "handoff.md"


def handoff_sentence(path: str) -> str:
    """What the request gains under a non-blind view."""
    return f"\n\nA previous agent worked on this task before you; its handoff is in {path}."


@dataclass(frozen=True)
class GivenHandoff:
    environment: Environment  # the attempt's own: still reachable when the agent was abandoned
    path: str

    @property
    def sentence(self) -> str:
        return handoff_sentence(self.path)

    def take_back(self) -> None:
        """Remove the file (whatever the agent made of it); an environment that cannot is broken."""
        quoted = shlex.quote(self.path)
        result = self.environment.exec(f"rm -rf -- {quoted} && test ! -e {quoted}", timeout_sec=60)
        if result.exit_code != 0:
            raise InfraError(f"could not remove the handoff file {self.path} before grading: "
                             f"{result.output.strip()[-300:]}")


def give_handoff(view: str, state: ResidualState | None, environment: Environment) -> GivenHandoff | None:
    """Write the view's file into `environment` (nothing for `blind` or a Clean Start)."""
    if state is None or view == BLIND:
        return None
    try:
        text = render(view, state)
    except OSError as exc:
        raise DatasetError(state.path, f"the {view} handoff cannot be read: {exc}") from exc
    if text is None:
        return None
    path = f"{environment.scratch_dir}/{HANDOFF_FILE}"
    environment.write_file(path, text.encode("utf-8"))
    return GivenHandoff(environment, path)
