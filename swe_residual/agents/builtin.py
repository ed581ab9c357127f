"""Built-in agents: `noop`, `oracle`, `cmd:<command>`."""

from __future__ import annotations

import shlex

from swe_residual.agents.base import AGENT_ERROR, SUBMITTED, AgentResult, AgentSession
from swe_residual.patches import apply_patch
from swe_residual.trajectory import steps_from_jsonl


class NoopAgent:
    """Declares the task done at once: measures what the starting state is worth by itself."""

    name = "noop"

    def run(self, session: AgentSession) -> AgentResult:
        return AgentResult(SUBMITTED, message="Done.")


class OracleAgent:
    """Discards inherited work, then runs the reference solution as Harbor's oracle does:
    `solution/solve.sh` (DeepSWE's commits its change), or `solution/solution.patch` where the
    task has no solve.sh. Every start must be solvable this way, under any grading rule."""

    name = "oracle"
    uses_reference_solution = True

    def run(self, session: AgentSession) -> AgentResult:
        if session.environment.base_commit is not None:
            # A repository: back to the clean base commit, inherited files and all.
            reset = session.exec("git reset -q --hard HEAD && git clean -fdxq", timeout_sec=120)
            if reset.exit_code != 0:
                return AgentResult(AGENT_ERROR, message=f"could not discard inherited work: {reset.output[-300:]}")
        solution = session.solution_dir
        if solution is not None and (solution / "solve.sh").is_file():
            return self._run_solve_sh(session)
        if session.reference_solution is None:
            return AgentResult(AGENT_ERROR, message="the task has neither solution/solve.sh nor solution/solution.patch")
        method = apply_patch(session.environment, session.reference_solution, source="solution/solution.patch", strict=False)
        session.trajectory.add("edit", command=f"apply solution/solution.patch ({method})", output="applied")
        return AgentResult(SUBMITTED, message="Applied the reference solution.")

    @staticmethod
    def _run_solve_sh(session: AgentSession) -> AgentResult:
        """Run solution/solve.sh inside the environment.

        The solution's files go to the scratch directory (never part of a state) and solve.sh runs
        there with SOLUTION_DIR and APP_DIR set. A machine cannot be reset like a repository, so
        solve.sh itself must bring any inherited machine state to the solution.
        """
        solution = session.solution_dir
        assert solution is not None
        target = f"{session.environment.scratch_dir}/solution"
        for path in sorted(p for p in solution.rglob("*") if p.is_file()):
            session.environment.write_file(f"{target}/{path.relative_to(solution).as_posix()}", path.read_bytes())
        result = session.exec(f"bash {shlex.quote(target)}/solve.sh",
                              env={"SOLUTION_DIR": target, "APP_DIR": session.environment.workdir})
        if result.exit_code != 0:
            return AgentResult(AGENT_ERROR, message=f"solve.sh exited with {result.exit_code}: {result.output[-300:]}")
        return AgentResult(SUBMITTED, message="Ran the reference solve.sh.")


class CommandAgent:
    """Runs any executable inside the environment, in the repository directory.

    The request arrives as a file (`$SWE_RESIDUAL_INSTRUCTION_FILE`) and as an environment
    variable (`$SWE_RESIDUAL_INSTRUCTION`). Exit status 0 declares the task done; any other
    status is the agent's own error. The agent may write its steps as JSON lines
    (`{"command": ..., "output": ...}`) to `$SWE_RESIDUAL_TRAJECTORY_FILE`; otherwise the
    command itself is the one recorded step.
    """

    def __init__(self, command: str, name: str | None = None) -> None:
        if not command.strip():
            raise ValueError("cmd: needs a command, e.g. --agent='cmd:./my-agent.sh'")
        self.command = command
        self.name = name or f"cmd:{command}"

    def run(self, session: AgentSession) -> AgentResult:
        scratch = session.environment.scratch_dir
        instruction_file = f"{scratch}/instruction.md"
        trajectory_file = f"{scratch}/trajectory.jsonl"
        session.environment.write_file(instruction_file, session.instruction.encode())
        env = {
            "SWE_RESIDUAL_INSTRUCTION": session.instruction,
            "SWE_RESIDUAL_INSTRUCTION_FILE": instruction_file,
            "SWE_RESIDUAL_TRAJECTORY_FILE": trajectory_file,
            "SWE_RESIDUAL_WORKDIR": session.workdir,
            "SWE_RESIDUAL_TIMEOUT_SEC": str(int(session.remaining_sec())),
            "SWE_RESIDUAL_MAX_STEPS": str(session.budget.max_steps or ""),
        }
        result = session.exec(self.command, env=env)  # raises BudgetExhausted on timeout
        written = session.environment.exec(f"cat {shlex.quote(trajectory_file)} 2>/dev/null", timeout_sec=60)
        if written.exit_code == 0 and written.stdout.strip():
            agent_steps = steps_from_jsonl(written.stdout, self.name).steps
            # The agent's own steps replace the single wrapper step.
            session.trajectory.steps = agent_steps
        if result.exit_code != 0:
            return AgentResult(AGENT_ERROR, message=f"exit status {result.exit_code}: {result.output.strip()[-300:]}")
        return AgentResult(SUBMITTED, message=result.stdout.strip()[-1000:] or None)
