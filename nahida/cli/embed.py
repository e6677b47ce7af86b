"""`nahida memory embed`: vectors for what has none yet, now (the background upkeep's work).

    nahida memory embed [--rebuild] [--json]

Embeds the turns, items and episodes never embedded, and those whose text has no vector from the
current embedder (after an import or a model change), on every core; `--rebuild` drops every
vector and embeds everything again. A terminal shows a bar with the count, the rate and the time
left. Ends with `embedded N, cached M, skipped K in T s (R texts/s)`: cached texts already had a
vector (the same text elsewhere), skipped ones are too short to mean anything ("好的").
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Annotated

import typer

from nahida.cli.state import echo_json, fail, state_of
from nahida.errors import ProviderError
from nahida.memory import EmbedReport


class Bar:
    """`progress(done)` as a line on stderr: rows done of the pending count, rate, ETA."""

    def __init__(self, total: int) -> None:
        self.total = max(total, 1)
        self.started = time.monotonic()
        self._last = 0.0

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if now - self._last < 0.5 and done < self.total:
            return
        self._last = now
        rate = done / max(now - self.started, 1e-6)
        left = max(self.total - done, 0) / rate if rate > 0 else 0.0
        share = min(done / self.total, 1.0)
        filled = int(share * 30)
        sys.stderr.write(
            f"\rembedding [{'#' * filled}{'-' * (30 - filled)}] {done:,}/{self.total:,}"
            f"  {rate:,.1f} rows/s  ETA {left:,.0f} s "
        )
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")


def embed(
    ctx: typer.Context,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Drop every vector and embed everything again.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Embed turns, items and episodes that have no vector yet, with progress."""
    state = state_of(ctx)
    with state.memory(foreground=True) as memory:
        embeddings = memory.embeddings
        if not embeddings.enabled:
            raise fail(f"no embedder: {embeddings.why}", as_json=as_json)

        async def run() -> EmbedReport:
            await embeddings.load()
            bar = None
            if sys.stderr.isatty() and not as_json:
                counts = await embeddings.counts()
                bar = Bar(counts.pending + (counts.stored if rebuild else 0))
            try:
                if rebuild:
                    return await embeddings.rebuild(progress=bar)
                return await embeddings.catch_up(progress=bar)
            finally:
                if bar is not None:
                    bar.close()
                await embeddings.aclose()

        try:
            report = asyncio.run(run())
        except (ProviderError, OSError) as exc:
            raise fail(f"embedding failed: {exc}", as_json=as_json) from None
    if as_json:
        echo_json(
            {
                "embedded": report.embedded,
                "cached": report.cached,
                "skipped": report.skipped,
                "swept": report.swept,
                "seconds": round(report.seconds, 3),
                "texts_per_second": round(report.rate, 1),
                "embedder": embeddings.why,
            }
        )
        return
    typer.echo(
        f"embedded {report.embedded}, cached {report.cached}, skipped {report.skipped}"
        f" in {report.seconds:.1f} s ({report.rate:,.1f} texts/s)"
    )
