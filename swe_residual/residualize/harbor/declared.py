"""Stage I's "declared done": the predecessor's own claim that the task is done (paper §3.2).

A Residual State is what a predecessor left after it *declared the task complete* and failed.
A run that stopped (a step limit, a crash, a model that went quiet mid-work) claimed nothing,
so "the last turn called no tool" is not the rule. Per harness:

- **Terminus / Terminus-2** declare with their answer's `task_complete` field (Terminus-1:
  `is_task_complete`). Harbor records it in the ATIF trajectory as a `mark_task_complete` tool
  call of that turn; raw-content trajectories and older Harbor versions keep the answer itself
  (`{"task_complete": true}` in JSON, `<task_complete>true</task_complete>` in XML). Terminus-2
  asks the model to confirm and stops only on a second `task_complete` in a row. Rule: the
  agent's **last turn** marks the task complete (a confirmation, when the turn before marked it
  too, is said in `how`). A run whose last turn typed commands, or marked nothing, stopped.
- **A tool-call agent** (OpenClaw) ends its run with a turn in words and no tool call. Rule: that
  final message declares the task done unless it **announces more work**: it is empty, its
  last line ends with `:` or an ellipsis (`...`, `…`: it was about to show or do something), or
  its last sentence is a first-person announcement of a next action ("Let me write a Python
  compressor...", "Now I'll run the tests.", "I need to check ..."). A report ("Created
  /app/run.py with ...", "The results have been saved to ...") declares it done.
- **pre.dev** (`predev`) declares with a tool, `return_result` (`summary`, `done`,
  `needsContinuation`): the harness answers "Chain complete." when it ends the run, "Frame
  checkpointed." when it ends a sub-agent's frame (`sequential_recurse`), and may ask the agent to
  confirm, which it does with another `return_result`. Rule: its **last** `return_result` does
  not say the work is unfinished (`done: false`, `needsContinuation: true`), was not answered as a
  sub-agent's frame, and no call that changes the machine (`bash`, `write_file`, `edit_file`,
  `execute_program`) follows it. Words after it (a confirmation) do not matter.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

MARK_COMPLETE = "mark_task_complete"
RETURN_RESULT = "return_result"  # pre.dev's
_FRAME_CLOSED = "Frame checkpointed"  # pre.dev's answer to a sub-agent's return_result
_ANSWER_FIELDS = ("task_complete", "is_task_complete")
_XML_COMPLETE = re.compile(r"<task_complete>\s*true\s*</task_complete>", re.IGNORECASE)
# A sentence that announces what the agent is about to do (its first words, after an optional
# connective), not what it did.
_NEXT_ACTION = re.compile(
    r"^(?:(?:now|next|then|so|ok|okay|alright|actually|first|finally|instead|wait)\b[,:]?\s+)*"
    r"(?:let me|let's|let us|i'll|i will|i'm going to|i am going to|i need to|i should|i must|i have to|"
    r"we need to|we'll|we should)\b",
    re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Declaration:
    declared: bool
    how: str  # the evidence, in one line (recorded with the run)


def answer_object(text: str) -> dict[str, Any] | None:
    """The JSON object of one Terminus answer (from its first `{` to its last `}`), or None
    when the answer holds none (its XML form, or prose)."""
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end <= start:
        return None
    try:
        data = json.loads(text[start:end + 1])
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _answer_declares(text: str) -> bool:
    """Whether one Terminus answer (JSON or XML form) sets `task_complete`."""
    data = answer_object(text)
    if data is not None and any(field in data for field in _ANSWER_FIELDS):
        return any(data.get(field) is True for field in _ANSWER_FIELDS)
    return bool(_XML_COMPLETE.search(text))


def _turn_marks(step: dict[str, Any]) -> bool:
    calls = [call for call in step.get("tool_calls") or [] if isinstance(call, dict)]
    if any(call.get("function_name") == MARK_COMPLETE for call in calls):
        return True
    message = step.get("message")
    return not calls and isinstance(message, str) and _answer_declares(message)


def terminus_declaration(turns: list[dict[str, Any]]) -> Declaration:
    """Terminus's claim from its agent turns (ATIF steps of the agent, copied context left out)."""
    if not turns:
        return Declaration(False, "the trajectory records no turn of the agent")
    last = turns[-1]
    step = last.get("step_id", len(turns))
    if not _turn_marks(last):
        return Declaration(False, f"its last turn (step {step}) did not mark the task complete: the run stopped")
    confirmed = len(turns) > 1 and _turn_marks(turns[-2])
    return Declaration(True, f"step {step} marks the task complete"
                       + (" (confirming the turn before)" if confirmed else ""))


def episodes_declaration(answers: list[str]) -> Declaration:
    """Terminus's claim from its answers as kept in `agent/episode-N/response.txt`, in order."""
    if not answers:
        return Declaration(False, "no episode kept its answer")
    if _answer_declares(answers[-1]):
        return Declaration(True, f"its last answer (episode {len(answers) - 1}) sets task_complete")
    return Declaration(False, f"its last answer (episode {len(answers) - 1}) does not set task_complete: "
                              "the run stopped")


def _last_sentence(text: str) -> str:
    paragraph = [part for part in re.split(r"\n\s*\n", text.strip()) if part.strip()][-1]
    line = [part for part in paragraph.splitlines() if part.strip()][-1].strip()
    sentences = [part for part in _SENTENCE_END.split(line) if part.strip()]
    return sentences[-1].strip().lstrip("*#>-• ").strip() if sentences else line


def final_message_declaration(message: str | None) -> Declaration:
    """A tool-call agent's claim from its final message (the last turn, which called no tool)."""
    text = (message or "").strip()
    if not text:
        return Declaration(False, "its last turn says nothing: the run stopped")
    last = _last_sentence(text)
    if last.endswith((":", "...", "…")):
        return Declaration(False, f"its final message ends announcing more ({last[-80:]!r}): the run stopped")
    if _NEXT_ACTION.match(last):
        return Declaration(False, f"its final message ends with a next action ({last[:80]!r}): the run stopped")
    return Declaration(True, f"its final message reports the work ({last[:80]!r})")


def return_result_declaration(calls: list[tuple[Any, str, dict[str, Any], str | None]],
                              acting: frozenset[str]) -> Declaration:
    """pre.dev's claim from its calls ((step, tool, arguments, answer), in order): its last
    `return_result` declares the work done, ends the run rather than a sub-agent's frame, and no
    call in `acting` (the tools that change the machine) comes after it."""
    ends = [position for position, call in enumerate(calls) if call[1] == RETURN_RESULT]
    if not ends:
        return Declaration(False, "it never called return_result: the run stopped")
    step, _, arguments, answer = calls[ends[-1]]
    if arguments.get("done") is False or arguments.get("needsContinuation") is True:
        return Declaration(False, f"its last return_result (step {step}) says the work is not done "
                                  f"(done {arguments.get('done')!r}, needsContinuation "
                                  f"{arguments.get('needsContinuation')!r})")
    if isinstance(answer, str) and answer.startswith(_FRAME_CLOSED):
        return Declaration(False, f"its last return_result (step {step}) closed a sub-agent's frame "
                                  f"({answer[:40]!r}), not the run: the run stopped")
    after = [call for call in calls[ends[-1] + 1:] if call[1] in acting]
    if after:
        return Declaration(False, f"it went on acting after its last return_result (step {step}): "
                                  f"{after[0][1]} at step {after[0][0]}: the run stopped")
    how = f" (answered {answer[:40]!r})" if isinstance(answer, str) and answer else ""
    return Declaration(True, f"step {step}: return_result declares the work done{how}")
