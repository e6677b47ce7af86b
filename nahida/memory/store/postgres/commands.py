"""Chat commands answered, in PostgreSQL: what keeps a command delivered again after a restart
from running twice (see `schema.ANSWERED_COMMANDS`)."""

from __future__ import annotations

from nahida.memory.store.postgres.db import Connection
from nahida.memory.store.values import CommandMessage

KEEP_SECONDS = 30 * 86_400  # implementations redeliver within minutes; a month is plenty


class CommandTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def answered(self, command: CommandMessage) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM answered_commands WHERE chat = %s AND message_id = %s AND time = %s",
            (command.chat, command.message_id, command.time),
        ).fetchone()
        return row is not None

    def add(self, command: CommandMessage, at: float) -> None:
        self.conn.execute(
            "INSERT INTO answered_commands (chat, message_id, time, answered_at)"
            " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (command.chat, command.message_id, command.time, at),
        )
        self.conn.execute(
            "DELETE FROM answered_commands WHERE answered_at < %s", (at - KEEP_SECONDS,)
        )
