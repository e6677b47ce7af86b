"""`workspace/users/<platform>_<id>.md` (DESIGN §9): one file per person with a profile, its
active bullets under the section headings (`### 身份与背景`), each with its id (`- [p_…] …`).
Edits sync back audited, as `human_edit` (profiles.hand_edit): an edited or moved bullet is
replaced, a deleted one archived, one added without an id created (private). The block of a
person without a bullet shows every heading, empty, so that a first one can be added by hand
(`nahida profile edit`)."""

from __future__ import annotations

from nahida.memory.core.models import PROFILE_SECTIONS
from nahida.memory.core.tokenize import index_text
from nahida.memory.markdown.block import Changes, flat
from nahida.memory.markdown.block import render as render_block
from nahida.memory.profiles import HandEdits, hand_edit
from nahida.memory.store.base import Tx
from nahida.workspace import safe_name

BEGIN = "<!-- nahida:profile:begin -->"
END = "<!-- nahida:profile:end -->"
GROUPS = PROFILE_SECTIONS
EMPTY = "<!-- no bullets yet: add one under a heading, as `- text` -->\n\n" + "\n\n".join(
    f"### {section}" for section in GROUPS
)


def file_name(user: str) -> str:
    """`onebot:42` → `users/onebot_42.md`; an id with characters outside the allow-list gets a
    hashed name (`paths.safe_name`), never a path of its own."""
    platform, _, rest = user.partition(":")
    return f"users/{safe_name(f'{platform}_{rest}')}.md"


class ProfileFile:
    """The projection of one person's profile."""

    begin = BEGIN
    end = END
    groups = GROUPS

    def __init__(self, user: str) -> None:
        self.user = user
        self.path = file_name(user)
        self.header = (  # the id on one line: a newline in it could write a marker line
            f"# Profile · {flat(user)}\n\nWhat the bot knows of this person, by section. Edit,"
            " move or delete a bullet, or add one without an id; the bot takes it over within"
            " seconds (`nahida memory sync` at once). Text outside the markers is yours.\n\n"
        )
        self.actor = f"human_edit:{self.path}"

    def shown(self, tx: Tx) -> tuple[str, dict[str, dict[str, str]]]:
        entries = tx.profiles.of_user(self.user, False)
        if not entries:
            return EMPTY, {}
        groups = [(s, [(e.id, e.text) for e in entries if e.section == s]) for s in GROUPS]
        snapshot = {e.id: {"group": e.section, "text": flat(e.text)} for e in entries}
        return render_block(groups), snapshot

    def known(self, tx: Tx, ids: set[str]) -> dict[str, dict[str, str]]:
        found: dict[str, dict[str, str]] = {}
        for entry_id in ids:
            entry = tx.profiles.get(entry_id)
            if entry is not None and entry.user == self.user and entry.status == "active":
                found[entry_id] = {"group": entry.section, "text": flat(entry.text)}
        return found

    def prepare(self, changes: Changes) -> HandEdits:
        edits = HandEdits(deleted=list(changes.deleted))
        for bullet, _ in [*changes.edited, *changes.moved]:
            edits.changed.append(
                (bullet.id or "", bullet.group, bullet.text, index_text(bullet.text))
            )
        for bullet in changes.added:
            edits.added.append((bullet.group, bullet.text, index_text(bullet.text)))
        return edits

    def apply(self, tx: Tx, edits: HandEdits) -> dict[str, int]:
        return hand_edit(tx, self.user, edits, self.actor, self.path)
