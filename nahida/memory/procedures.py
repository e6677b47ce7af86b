"""Behavioural rules (procedures): items of kind `procedure`, in force where they are visible.

A rule comes from rule extraction ("以后回答我都用英文", "不要用韩语"), from the model's
`procedure_write`, or from an admin; it is an item like any other (candidate, commit mode, audit,
`/memory why`), in `user:` scope (how to answer that person; public when said in a group) or
`chat:` scope (for everyone there: only a group's owner or admin, or a bot admin, sets those:
`access.may_set_chat_rules`). A newer rule for the same slot (the answer's language, its style)
supersedes the older one.

Every turn the rules the speaker's viewer sees are injected in `<behavioral_guidelines>`, the
group's and global ones first, each newest first, those of confidence ≥ 0.3 only, within a small
budget. Each is shown as what it is — a rule for this group (by whom) or for answering one person
— quoted and bounded (`RULE_CHARS`); a person's own rule without the links and contacts in it
(only an owner or admin gives the bot those to pass on), and a text that reads as an instruction
to the model ("ignore previous instructions…") never as a rule (`quotes.reads_as_instruction`:
recall shows it as a marked quotation). `/rules` lists them, `/rules forget <id>` archives one
(the permissions of `/memory forget`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from nahida.envelope import ChatKey, UserKey
from nahida.errors import MemoryPermissionError
from nahida.memory.core import access
from nahida.memory.core.access import Actor
from nahida.memory.core.models import INJECTED_CONFIDENCE, Candidate, MemoryItem, WriteResult
from nahida.memory.core.scopes import Viewer, Visibility
from nahida.memory.recall import quotes
from nahida.memory.store.base import Store, Tx
from nahida.memory.write import candidates
from nahida.providers.base import estimate_tokens

KIND = "procedure"
IN_FORCE = 12  # rules injected at most
BUDGET_TOKENS = 300
RULE_CHARS = 200  # of a rule's text in the prompt
CONTEXT_CHARS = 60  # of when it applies
Propose = Callable[[Candidate, str], Awaitable[WriteResult]]
Forget = Callable[[str, Actor, str], Awaitable[MemoryItem]]


def is_guideline(item: MemoryItem) -> bool:
    """Whether a rule may stand among the guidelines: not a text that reads as an instruction to
    the model (that is shown, marked, where recall finds it, never obeyed as a rule)."""
    return not (
        quotes.reads_as_instruction(item.content) or quotes.reads_as_instruction(item.title)
    )


def guideline(item: MemoryItem) -> str:
    """One rule as the prompt shows it: `- [m_x] group rule by Olga: “…” (when: “…”)`, or
    `rule for Bob: …` (a person's own), `global rule: …`."""
    who = quotes.speaker(item)
    if item.scope.startswith("chat:"):
        whose = f"group rule by {who}" if who else "group rule"
    elif item.scope.startswith("user:"):
        whose = f"rule for {who or item.subject_user or item.scope[len('user:') :]}"
    else:
        whose = "global rule"
    said = quotes.quoted(quotes.rule_text(item, item.content), RULE_CHARS)
    when = f" (when: {quotes.quoted(quotes.rule_text(item, item.title), CONTEXT_CHARS)})"
    return f"- [{item.id}] {whose}: {said}{when if item.title else ''}"


def guidelines(rules: list[MemoryItem], budget_tokens: int = BUDGET_TOKENS) -> str | None:
    """The rules' lines within the budget (the group's and global ones first, then the person's,
    each newest first), or None. A text that reads as an instruction is no rule (`is_guideline`)."""
    lines: list[str] = []
    used = 0
    ordered = sorted(rules, key=lambda rule: rule.scope.startswith("user:"))  # stable
    for rule in ordered:
        if not is_guideline(rule):
            continue
        text = guideline(rule)
        used += estimate_tokens(text)
        if used > budget_tokens:
            break
        lines.append(text)
    return "\n".join(lines) or None


def rules_in_force(tx: Tx, visibility: Visibility, limit: int = IN_FORCE) -> list[MemoryItem]:
    """A unit: the active rules the visibility allows (newest first), confidence ≥ 0.3. (Most
    viewers have none: a probe of the index first, not a sorted listing, every message.)"""
    if not tx.items.any_active(visibility, KIND):
        return []
    found = tx.items.listed(visibility, kind=KIND, status="active", limit=limit)
    return [item for item in found if item.confidence >= INJECTED_CONFIDENCE]


@dataclass(frozen=True, slots=True)
class Procedures:
    """`memory.procedures`: the rules in force for a viewer, written through `Items`."""

    store: Store
    propose: Propose  # `Items.propose`
    forget_item: Forget  # `Items.forget`

    @staticmethod
    def withholds_links(rule: MemoryItem) -> bool:
        """Whether the prompt shows `rule` without some of its words: the links and contacts in
        a person's own rule (`quotes.rule_text`), which `/memory remember` tells them."""
        return quotes.rule_text(rule, rule.content) != rule.content

    async def in_force(self, viewer: Viewer, limit: int = IN_FORCE) -> list[MemoryItem]:
        """The active rules the viewer sees (newest first), confidence ≥ 0.3."""
        visibility = viewer.visibility()
        return await self.store.read(rules_in_force, visibility, limit)

    async def write(
        self,
        rule: str,
        *,
        chat: ChatKey,
        user: UserKey,
        context: str = "",
        for_chat: bool = False,
        actor: Actor | None = None,
        message_id: str | None = None,
    ) -> WriteResult:
        """Store a rule (`procedure_write`). A rule for the whole chat needs an `actor` who may
        set them (`access.may_set_chat_rules`: a group's owner or admin, a bot admin), else
        MemoryPermissionError; in a private chat it is the person's."""
        if not rule.strip():
            raise ValueError("the rule is empty")
        for_chat = for_chat and chat.is_group
        if for_chat and not access.may_set_chat_rules(actor, chat):
            raise MemoryPermissionError("only the group's owner or admins set rules for the chat")
        candidate = candidates.procedure(
            rule,
            context=context,
            chat=chat,
            user=user,
            for_chat=for_chat,
            message_id=message_id,
            actor=actor,
        )
        return await self.propose(candidate, str(user))

    async def forget(self, item_id: str, viewer: Viewer, actor: Actor) -> MemoryItem:
        """Archive a rule the viewer sees; LookupError when there is none by that id,
        MemoryPermissionError when the actor may not."""
        visibility = viewer.visibility()
        found = await self.store.read(lambda tx: tx.items.visible(item_id, visibility))
        if found is None or found.kind != KIND or found.status != "active":
            raise LookupError(item_id)
        return await self.forget_item(item_id, actor, "rule forgotten")
