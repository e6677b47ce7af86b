"""What this backend does not hold yet (the derived tables and vectors: the next part of
issue 52): any use raises NotImplementedError. Delete this module once every table is built."""

from __future__ import annotations

from typing import NoReturn


def refuse(what: str) -> NoReturn:
    raise NotImplementedError(f"{what} is not built yet on postgres")


class NotBuilt:
    """A table of a `Tx` not built yet: any use of it is refused."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attribute: str) -> NoReturn:
        refuse(f"tx.{self.name}.{attribute}")
