"""Applying and capturing patches inside an environment.

Residual states are applied strictly (`git apply`, no fuzz: the state must be what the
predecessor left). Reference solutions may fall back, as the SWE-bench harness does, to
`git apply --reject`-free alternatives: `patch --fuzz`. The final state is captured as one
binary-safe diff against the base commit, untracked and ignored files included, through a
throwaway index so the agent's own index is left as it was.
"""

from __future__ import annotations

import shlex

from swe_residual.environments.base import Environment
from swe_residual.errors import DatasetError, InfraError
from swe_residual.states.patch_safety import check_patch_text

def apply_patch(env: Environment, patch: str, *, source: str, strict: bool = True) -> str:
    """Apply `patch` to the working tree without committing; return the method that worked."""
    check_patch_text(patch, source=source)
    if not patch.strip():
        return "empty"
    patch_file = f"{env.scratch_dir}/apply.patch"
    env.write_file(patch_file, patch.encode("utf-8", errors="surrogateescape"))
    quoted = shlex.quote(patch_file)
    attempts = [("git apply", f"git apply --whitespace=nowarn {quoted}")]
    if not strict:
        attempts += [
            ("git apply --recount", f"git apply --whitespace=nowarn --recount {quoted}"),
            ("patch --fuzz=5", f"patch --batch --forward --fuzz=5 -p1 -i {quoted}"),
        ]
    errors = []
    for method, command in attempts:
        result = env.exec(command, timeout_sec=120)
        if result.exit_code == 0:
            env.exec(f"rm -f {quoted}", timeout_sec=30)
            return method
        errors.append(f"{method}: {result.output.strip()[-500:]}")
    raise DatasetError(source, "patch does not apply to the base commit: " + " | ".join(errors))


def capture_patch(env: Environment) -> str:
    """`git diff --binary` of the whole working tree (untracked and ignored files too) vs the base,
    by the environment's own git. The runner uses it only for an environment that has no
    `capture_patch` of its own: the docker and local ones diff with the harness's git instead
    (swe_residual/environments/harness_git.py), which nothing the agent did can replace, and
    which leaves out what the image itself put in the tree (environments/clean_start.py); this
    fallback has no record of the clean start and captures such files too."""
    if env.base_commit is None:
        raise InfraError("no base commit recorded for this environment")
    index = shlex.quote(f"{env.scratch_dir}/capture.index")
    command = (
        f"rm -f {index} && GIT_INDEX_FILE={index} git add -A -f . "
        f"&& GIT_INDEX_FILE={index} git diff --cached --binary --no-color {env.base_commit}; "
        f"status=$?; rm -f {index}; exit $status"
    )
    result = env.exec(command, timeout_sec=300)
    if result.exit_code != 0:
        raise InfraError(f"could not capture the final state: {result.stderr.strip()[-500:]}")
    return result.stdout
