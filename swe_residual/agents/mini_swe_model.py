"""The model side of the mini-swe-agent adapter: endpoint, retries, cost, tokens, failures.

mini-swe-agent's own model classes (litellm by default) talk to the model service. This
module only configures them and watches what they return:

- `configure_model`: the `api_base` option (an OpenAI-compatible endpoint such as vLLM's),
  and cost tracking that tolerates unpriced models (their cost is unknown, not an error).
- `model_retry_attempts`: how often a failing model call is retried (`model_retries`).
- `UsageTrackingModel`: per-call token usage and whether each call's cost was known.
- `is_model_service_failure`: which errors are the model service failing (infrastructure).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

# mini-swe-agent's own retry loop (tenacity, 4-60 s waits) reads its number of attempts from
# this variable at every model call; it is its only setting for it.
RETRY_ATTEMPTS_ENV = "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT"
COST_TRACKING_ENV = "MSWEA_COST_TRACKING"
_warned_unpriced: set[str] = set()  # one warning per model and process, not one per item


def configure_model(model_config: dict[str, Any], options: Mapping[str, str], *, retries: int | None) -> dict[str, Any]:
    """The model config with the adapter's options applied (a new dict).

    Cost tracking: unless the config or `$MSWEA_COST_TRACKING` chooses, calls of a model that
    has no price (a self-hosted one) cost "unknown" instead of stopping the run with
    mini-swe-agent's "This model isn't mapped yet" error; `UsageTrackingModel` notices them.
    """
    config = dict(model_config)
    kwargs = dict(config.get("model_kwargs") or {})
    if options.get("api_base"):
        kwargs["api_base"] = options["api_base"]
    if retries is not None and "max_retries" not in kwargs and "num_retries" not in kwargs:
        # `model_retries` counts every retry of a call: the openai client under litellm
        # would otherwise add its own (2 by default) inside each of mini-swe-agent's attempts.
        kwargs["max_retries"] = 0
    config["model_kwargs"] = kwargs
    if "cost_tracking" not in config and not os.environ.get(COST_TRACKING_ENV):
        config["cost_tracking"] = "ignore_errors"
    return config


def parse_retries(value: str | None) -> int | None:
    if value is None:
        return None
    retries = int(value)  # ValueError: reported by the caller as a usage error
    if retries < 0:
        raise ValueError("must be 0 or more")
    return retries


@contextmanager
def model_retry_attempts(retries: int | None) -> Iterator[None]:
    """mini-swe-agent retries a failing call `retries` times while the agent runs (None: its default)."""
    if retries is None:
        yield
        return
    saved = os.environ.get(RETRY_ATTEMPTS_ENV)
    os.environ[RETRY_ATTEMPTS_ENV] = str(retries + 1)  # its setting counts attempts, the first included
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(RETRY_ATTEMPTS_ENV, None)
        else:
            os.environ[RETRY_ATTEMPTS_ENV] = saved


@dataclass(frozen=True)
class CallUsage:
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_known: bool


def _tokens(usage: Mapping[str, Any], *names: str) -> int | None:
    for name in names:
        value = usage.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


class UsageTrackingModel:
    """mini-swe-agent's model object, seen through: records each call's usage, changes nothing.

    Its `query` returns (or, for a reply in the wrong format, raises `FormatError` with) a
    message whose `extra` holds the raw `response` (with the provider's `usage`) and the
    `cost`. With cost tracking `ignore_errors`, mini-swe-agent reports an unpriced call as
    cost 0.0 (a priced call is never 0: it treats 0 as an error), so 0.0 there means unknown.
    """

    def __init__(self, model: Any, *, cost_limit: float | None) -> None:
        self.model = model
        self.cost_limit = cost_limit
        self.calls: list[CallUsage] = []
        config = getattr(model, "config", None)
        self._zero_is_unknown = getattr(config, "cost_tracking", None) == "ignore_errors"
        self._name = str(getattr(config, "model_name", "") or type(model).__name__)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)  # everything else is the model's own

    def query(self, messages: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        from minisweagent.exceptions import FormatError

        try:
            message = self.model.query(messages, **kwargs)
        except FormatError as exc:  # the call was made and billed; only its format was wrong
            self._record(exc.messages[0].get("extra") or {} if exc.messages else {})
            raise
        self._record(message.get("extra") or {})
        return message

    def _record(self, extra: Mapping[str, Any]) -> None:
        response = extra.get("response")
        usage = response.get("usage") if isinstance(response, Mapping) else None
        usage = usage if isinstance(usage, Mapping) else {}
        cost = extra.get("cost")
        cost_known = isinstance(cost, (int, float)) and not (self._zero_is_unknown and cost == 0.0)
        self.calls.append(CallUsage(
            prompt_tokens=_tokens(usage, "prompt_tokens", "input_tokens"),  # chat / responses API names
            completion_tokens=_tokens(usage, "completion_tokens", "output_tokens"),
            cost_known=cost_known,
        ))
        if not cost_known and self.cost_limit and self._name not in _warned_unpriced:
            _warned_unpriced.add(self._name)
            print(f"warning: mini-swe-agent: model {self._name} has no known price: its cost is unknown (null "
                  f"in the records) and the cost limit of {self.cost_limit} is not enforced; steps and "
                  f"time limits still are", file=sys.stderr)

    @property
    def cost_known(self) -> bool:
        return all(call.cost_known for call in self.calls)

    def token_totals(self) -> dict[str, int] | None:
        """Prompt and completion tokens over all calls; None unless every call reported both."""
        if not self.calls or any(c.prompt_tokens is None or c.completion_tokens is None for c in self.calls):
            return None
        return {"prompt": sum(c.prompt_tokens or 0 for c in self.calls),
                "completion": sum(c.completion_tokens or 0 for c in self.calls)}


# HTTP statuses of a model service that is failing, not refusing the request: too many
# requests, and server-side errors (500 internal, 502 bad gateway, 503 unavailable, ...).
_SERVICE_STATUS_TOO_MANY_REQUESTS = 429


def _failing_status(status: object) -> bool:
    return isinstance(status, int) and (status == _SERVICE_STATUS_TOO_MANY_REQUESTS or 500 <= status <= 599)


def _service_error_classes() -> tuple[type[BaseException], ...]:
    """Exception classes that always mean the model service failed, from the loaded libraries.

    Only modules already imported are looked at: an exception of a library nobody imported
    cannot have been raised, and importing litellm just to compare costs seconds.
    litellm's classes derive from openai's (`litellm.RateLimitError` is an
    `openai.RateLimitError`, `litellm.Timeout` an `openai.APITimeoutError`, itself an
    `openai.APIConnectionError`), so openai's base classes cover both; litellm's
    `ServiceUnavailableError` and `BadGatewayError` are listed because they derive only from
    the generic status error. requests' connection errors and timeouts come from
    mini-swe-agent's OpenRouter and Requesty models, which wrap them in their own errors.
    """
    classes: list[type[BaseException]] = []
    openai = sys.modules.get("openai")
    if openai is not None:
        classes += [openai.RateLimitError, openai.APIConnectionError, openai.InternalServerError]
    litellm_exceptions = sys.modules.get("litellm.exceptions")
    if litellm_exceptions is not None:
        classes += [litellm_exceptions.RateLimitError, litellm_exceptions.APIConnectionError,
                    litellm_exceptions.Timeout, litellm_exceptions.InternalServerError,
                    litellm_exceptions.ServiceUnavailableError, litellm_exceptions.BadGatewayError]
    requests_exceptions = sys.modules.get("requests.exceptions")
    if requests_exceptions is not None:
        classes += [requests_exceptions.ConnectionError, requests_exceptions.Timeout]
    return tuple(classes)


def _status_error_classes() -> tuple[type[BaseException], ...]:
    """Exception classes that carry the service's HTTP status (checked with `_failing_status`)."""
    classes: list[type[BaseException]] = []
    openai = sys.modules.get("openai")
    if openai is not None:
        classes.append(openai.APIStatusError)  # `status_code`
    litellm_exceptions = sys.modules.get("litellm.exceptions")
    if litellm_exceptions is not None:
        classes.append(litellm_exceptions.APIError)  # `status_code`, e.g. 500 for a provider's crash
    requests_exceptions = sys.modules.get("requests.exceptions")
    if requests_exceptions is not None:
        classes.append(requests_exceptions.HTTPError)  # `response.status_code`
    return tuple(classes)


def is_model_service_failure(exc: BaseException) -> bool:
    """Whether an exception out of mini-swe-agent is its model service failing.

    Yes: a rate limit, a lost or refused connection, a timeout of the model API, a server
    error (HTTP 5xx) or too many requests (429), raised by litellm or openai, or by requests
    underneath another model class (followed through `raise ... from`). No: a request the
    service refuses for what it asks (bad request, context window exceeded, unknown model,
    authentication): retrying from a fresh instance would fail the same way.
    """
    service_errors, status_errors = _service_error_classes(), _status_error_classes()
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, service_errors):
            return True
        if isinstance(link, status_errors):
            response = getattr(link, "response", None)
            status = getattr(link, "status_code", None)
            if not isinstance(status, int):
                status = getattr(response, "status_code", None)
            if _failing_status(status):
                return True
        link = link.__cause__
    return False
