"""Prompt-size benchmark: how big each request of one long session gets (DESIGN §7 targets).

One private chat of `--rounds` rounds through the real runner and SQLite. The model is an
in-process one that answers chat requests with an echo and memory requests with a bounded
summary of what they carried (so the warm summary is as long as it may grow); compaction runs in
place after each turn, so every request sees the summary it would see on a quiet bot. Prints, at
the rounds asked for, the estimated tokens of the whole request, of its system prompt (persona,
profile, rules), of the recalled memory and of the warm summary, against `session.context_tokens`
and `memory.budget_tokens`.

    .venv/bin/python scripts/bench_context.py --rounds 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nahida.app import App, Paths  # noqa: E402
from nahida.config import Config  # noqa: E402
from nahida.envelope import ChatKey, Envelope, Reply, Role, Segment, Sender, UserKey  # noqa: E402
from nahida.logs import configure_logging  # noqa: E402
from nahida.providers.base import ChatRequest, ChatResponse, Message, estimate_tokens  # noqa: E402
from nahida.providers.router import ModelRouter, resolve_routes  # noqa: E402
from nahida.server import InboundServer  # noqa: E402

TOPICS = ["旅行", "工作", "读书", "做饭", "跑步", "电影", "学日语", "搬家", "养猫", "理财"]


class Recording:
    """Echoes chat requests and records them; answers memory requests with their own text, cut
    to what a summary may hold (the summarizer's worst case: it keeps everything it may)."""

    name = "rec"

    def __init__(self) -> None:
        self.chats: list[tuple[Message, ...]] = []

    async def chat(self, request: ChatRequest) -> ChatResponse:
        last = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        if request.messages[0].content.startswith(("You keep", "You consolidate", "A conv")):
            if "JSON" in request.messages[0].content:
                summary = last[-500:]
                body = json.dumps({"facts": [], "profile": [], "summary": summary})
                return ChatResponse(body)
            return ChatResponse(last[-1200:])
        self.chats.append(request.messages)
        return ChatResponse(f"好的，关于{last[-20:]}，我记下了。")

    async def ping(self) -> None: ...

    async def aclose(self) -> None: ...


class Quiet:
    platform = "bench"

    def mount(self, server: InboundServer) -> None: ...

    async def run(self, submit: object) -> None: ...

    async def send(self, reply: Reply) -> str | None:
        return None


def message(n: int, at: datetime) -> Envelope:
    topic = TOPICS[n % len(TOPICS)]
    text = f"第{n}轮：我最近在想{topic}的事，周{n % 7 + 1}想和你再聊聊{topic}的细节"
    return Envelope(
        platform="bench",
        self_id="bot",
        chat=ChatKey.parse("bench:private:u1"),
        sender=Sender(UserKey.parse("bench:u1"), "小明", Role.MEMBER),
        message_id=f"m{n}",
        time=at,
        segments=(Segment.plain(text),),
        text=text,
        to_me=True,
    )


def sizes(messages: tuple[Message, ...]) -> dict[str, int]:
    found = {"total": sum(estimate_tokens(m.content) for m in messages), "memory": 0, "summary": 0}
    found["system"] = estimate_tokens(messages[0].content)
    for m in messages:
        if m.role == "user" and m.content.startswith("[长期记忆]"):
            found["memory"] = estimate_tokens(m.content)
        if m.role == "user" and m.content.startswith("[对话摘要]"):
            found["summary"] = estimate_tokens(m.content)
    return found


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--report", type=int, nargs="*", default=[10, 50, 200])
    args = parser.parse_args()
    configure_logging("WARNING", "console")
    provider = Recording()
    model = ModelRouter({"rec": provider}, resolve_routes({}, {"rec": "m"}))
    config = Config.model_validate(
        {
            "memory": {"embedding": {"backend": "none"}},
            "bot": {"rate_limit": {"per_chat_per_minute": 0}},
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        paths = Paths(None, Path(tmp) / "data", Path(tmp) / "ws")
        app = App(config, paths, adapters=[Quiet()], model=model)  # type: ignore[list-item]
        app.runner.background = None  # compaction in place: each request sees its summary
        app.memory.working.schedule = None
        start = datetime(2026, 5, 1, 9, tzinfo=UTC)
        try:
            for n in range(1, args.rounds + 1):
                await app.runner.handle(message(n, start + timedelta(minutes=n)))
        finally:
            app.memory.close()
    budget, memory_budget = config.session.context_tokens, config.memory.budget_tokens
    print(f"# bench_context: one session of {args.rounds} rounds, instant model\n")
    print(f"budgets: session.context_tokens {budget}, memory.budget_tokens {memory_budget}\n")
    print("| round | request tokens | system | memory | warm summary | hot turns |")
    print("|---|---|---|---|---|---|")
    worst = {"total": 0, "memory": 0}
    for n, messages in enumerate(provider.chats, 1):
        found = sizes(messages)
        worst = {k: max(worst[k], found[k]) for k in worst}
        if n in args.report:
            hot = sum(1 for m in messages[1:-1] if not m.content.startswith(("[", "好的。")))
            print(
                f"| {n} | {found['total']} | {found['system']} | {found['memory']}"
                f" | {found['summary']} | {hot} |"
            )
    print(
        f"\nlargest request {worst['total']} tokens (budget {budget}),"
        f" largest memory part {worst['memory']} (budget {memory_budget})"
    )


if __name__ == "__main__":
    asyncio.run(main())
