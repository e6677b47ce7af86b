"""The `nahida` command line: one module per command group, no SQL and no business logic (they
call the memory facade and the app's builders)."""

from nahida.cli.main import app, main

__all__ = ["app", "main"]
