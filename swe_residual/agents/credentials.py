"""A model's credentials, checked once before the run: a key that is not set would fail every
attempt of every item, each retried as an infrastructure failure, where the run should stop at
once with a usage error naming the variable (README: "What cannot work stops the run there").

Which variables a model needs is litellm's knowledge (`litellm.validate_environment`), where
litellm is installed (mini-swe-agent's model layer); Harbor's agents are checked by Harbor's
own preflight in its Python (`harbor_helper.missing_credentials`). Only presence is checked:
no request is made, no key is validated.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence


def missing_model_keys(model: str, *, api_base: str | None = None, api_key: str | None = None) -> list[str]:
    """The variables litellm says `model` needs and the environment lacks ([] when it needs
    none, when the model is not litellm's to know, or when litellm is not installed)."""
    try:
        import litellm
    except ImportError:
        return []
    # litellm prints its provider list for a model it cannot place: not the run's business.
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            found = litellm.validate_environment(model=model, api_key=api_key, api_base=api_base)
        except Exception:  # noqa: BLE001 - a model litellm cannot read is checked when it runs
            return []
    return [str(name) for name in found.get("missing_keys") or []]


def credentials_error(what: str, variables: Sequence[str], detail: str = "") -> str:
    """The usage error for `what` (`--agent=... --model=...`) lacking one of `variables`."""
    if not variables:
        return f"{what}: its model's credentials are not set: {detail}"
    names = " or ".join(variables)
    return (f"{what}: the model needs {names} in the environment, and it is not set "
            f"(export it before the run; a local endpoint that takes any key can be given a dummy one)")
