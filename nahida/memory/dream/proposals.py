"""A dream model's answer, read strictly (DESIGN §8): a JSON object `{"ops": [...]}`, each op one
of add / update / supersede / archive with kind, content, scope, evidence (turn ids), confidence
and reason, validated by pydantic in strict mode (no coercion: `"0.9"` is not a number). Anything
else — no JSON, a wrong type, an unknown field, a cut-off answer — is `Malformed`, with what was
wrong, so the model can be asked again. When it was asked twice in vain, `from_rules` proposes
what rule extraction finds in the same turns instead."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from nahida.envelope import ChatKey, UserKey
from nahida.memory.core.kinds import Dreamed
from nahida.memory.core.models import Proposal, Turn
from nahida.memory.history.compress import json_object
from nahida.memory.write import write
from nahida.memory.write.extract import extract

Op = Literal["add", "update", "supersede", "archive"]
MAX_OPS_READ = 200  # an answer with more is malformed (max_ops then bounds what is applied)
CONTENT_CHARS = 1000
ERROR_CHARS = 800
CUT_OFF = ("length", "max_tokens")
Checked = tuple[Proposal, write.Prepared | None]  # the op's record, and its candidate if it passed


class Malformed(Exception):
    """The answer could not be read; the message says what was wrong."""


class ProposedOp(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    op: Op
    item: str | None = None
    kind: Dreamed | None = None
    content: str = Field("", max_length=CONTENT_CHARS)
    scope: str | None = None
    evidence: list[str] = Field(default_factory=list, max_length=20)
    confidence: float = Field(ge=0.0, le=1.0)
    reason: str = Field("", max_length=500)

    @model_validator(mode="after")
    def _complete(self) -> ProposedOp:
        if self.op != "add" and not self.item:
            raise ValueError(f"{self.op} needs the id of the item it acts on (item)")
        if self.op != "archive":
            if not self.content.strip():
                raise ValueError(f"{self.op} needs content")
            if self.kind is None:
                raise ValueError(f"{self.op} needs kind")
        if self.op == "add" and not self.scope:
            raise ValueError("add needs scope")
        if not self.evidence:
            raise ValueError("every op needs evidence: the ids of the turns that support it")
        return self


class Answer(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    ops: list[ProposedOp] = Field(max_length=MAX_OPS_READ)


def read(text: str, finish_reason: str = "") -> list[ProposedOp]:
    """The ops of an answer; raises `Malformed`."""
    if finish_reason in CUT_OFF:
        raise Malformed(f"the answer was cut off (finish_reason {finish_reason!r})")
    data = json_object(text)
    if data is None:
        raise Malformed("the answer holds no JSON object")
    try:
        return Answer.model_validate(data).ops
    except ValidationError as exc:
        raise Malformed(_errors(exc)) from None


def _errors(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "answer"
        parts.append(f"{where}: {error['msg']}")
    text = "; ".join(parts)
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


def from_rules(key: ChatKey, turns: Sequence[Turn], tz: tzinfo | None) -> list[Checked]:
    """What rule extraction finds in the people's turns, when the model's answer was unusable
    (behavioural rules are left to the live extraction, which knows who may set them)."""
    checked: list[Checked] = []
    for turn in turns:
        if turn.role != "user" or not turn.speaker:
            continue
        found = extract(
            turn.content,
            chat=key,
            user=UserKey.parse(turn.speaker),
            message_id=turn.message_id,
            turn_id=turn.id,
            time=turn.time.timestamp(),
            tz=tz,
        )
        for candidate in found:
            if candidate.kind == "procedure":
                continue
            proposal = Proposal(
                "add",
                candidate.kind,
                candidate.content,
                candidate.scope,
                evidence=(f"t{turn.id}",),
                confidence=candidate.confidence,
                reason="rule extraction (the dream answer was unusable)",
            )
            checked.append((proposal, write.prepare(candidate)))
    return checked
