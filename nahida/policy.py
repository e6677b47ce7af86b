"""Decides whether the bot answers a message or only observes it (stored for memory, no reply).

Private messages are always answered. In groups the chat's policy decides: `mention` (an @ or a
reply to the bot, i.e. `to_me`), `prefix` (starts with a nickname or a configured prefix),
`keyword`, `probability`, `always`, `never`. `bot.group_overrides[<ChatKey>]` sets policy,
`prefix`, `keywords` and `probability` per chat. A mention always counts, whatever the policy,
except under `never`. Commands in a group need the mention too, unless the policy is `always`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nahida.envelope import Envelope


@dataclass
class ReplyPolicy:
    policy: str = "mention"
    nicknames: Sequence[str] = ()
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    rng: random.Random = field(default_factory=random.Random)

    def _policy_of(self, envelope: Envelope) -> tuple[str, Mapping[str, Any]]:
        override = self.overrides.get(str(envelope.chat), {})
        return str(override.get("policy", self.policy)), override

    def accepts_command(self, envelope: Envelope) -> bool:
        """A command in a group is the bot's when it is addressed to the bot (an @, a reply to
        it, a leading nickname), or the chat's policy is `always`: several bots often share a
        group, and a `/new` or `/memory forget` typed for another one must not act here."""
        if not envelope.chat.is_group or envelope.to_me:
            return True
        return self._policy_of(envelope)[0] == "always"

    def should_respond(self, envelope: Envelope) -> bool:
        if not envelope.chat.is_group:
            return True
        policy, override = self._policy_of(envelope)
        if policy == "never":
            return False
        if envelope.to_me or policy == "always":
            return True
        text = envelope.text.strip().lower()
        if policy == "prefix":
            prefixes = [*self.nicknames, *override.get("prefix", [])]
            return any(text.startswith(p.lower()) for p in prefixes if p)
        if policy == "keyword":
            return any(k.lower() in text for k in override.get("keywords", []) if k)
        if policy == "probability":
            return self.rng.random() < float(override.get("probability", 0.0))
        return False
