"""Rule-based extraction after each user turn (DESIGN §6): what people say about themselves.

Only the person's own words are read, never the bot's; `statements` reads them into statements,
and `candidates.extracted` turns each into a candidate.

Scopes: in a private chat everything goes to `user:<U>`, private. In a group what is about the
speaker (preferences, identity, tasks, "我决定…", an explicit remember of a first-person sentence,
behavioural rules) goes to `user:<U>` marked public, since it was said in public; group decisions
("以后我们…"), other explicit remembers and the rules a group's owner or admin sets for the chat go
to `chat:<G>`, public (who may set those: `access.may_set_chat_rules`, asked in
`candidates.rule_scope`). Candidates carry evidence (chat, message, turn,
time, a short redacted quote) and are proposed as source `rule_extract`; the commit mode decides.
A statement that holds a secret, or had one taken out (`[REDACTED:…]`: history is stored that
way), gives nothing: "记住我的key是 …" is refused where it is said, and a placeholder is no memory.
"""

from __future__ import annotations

from datetime import tzinfo

from nahida.envelope import ChatKey, UserKey
from nahida.memory.core.access import Actor
from nahida.memory.core.models import Candidate
from nahida.memory.core.safety import contains_secret, was_redacted
from nahida.memory.write import candidates
from nahida.memory.write.statements import statements

SOURCE = "rule_extract"


def extract(
    text: str,
    *,
    chat: ChatKey,
    user: UserKey,
    message_id: str | None = None,
    turn_id: int | None = None,
    time: float | None = None,
    tz: tzinfo | None = None,
    actor: Actor | None = None,
) -> list[Candidate]:
    """Candidates for what `user` said in `chat` (see the module docstring for scopes).
    `actor`: the speaker (their name; whether they may set the chat's behavioural rules: anyone
    else's rule for the chat is kept as a rule for answering them)."""
    return [
        candidates.extracted(
            statement,
            chat=chat,
            user=user,
            message_id=message_id,
            turn_id=turn_id,
            at=time,
            tz=tz,
            actor=actor,
        )
        for statement in statements(text)
        if not (was_redacted(statement.content) or contains_secret(statement.content))
    ]
