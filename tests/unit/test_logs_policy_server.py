"""Log masking, the reply policy, the inbound server and the scheduler's guard."""

from __future__ import annotations

import asyncio
import io
import json
import random

import aiohttp
import structlog
from aiohttp import web

from nahida.envelope import Role
from nahida.logs import configure_logging
from nahida.policy import ReplyPolicy
from nahida.scheduler import JobContext, Schedule, Scheduler
from nahida.server import InboundServer
from tests.helpers import envelope


def test_no_secret_reaches_a_log_line() -> None:
    stream = io.StringIO()
    configure_logging("INFO", "json", secrets=["my-config-token-123"], stream=stream)
    log = structlog.get_logger("test")
    log.info("connected", token="my-config-token-123", url="ws://x/?access_token=abc")
    log.warning("provider said", detail="invalid key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789")
    try:
        raise RuntimeError(
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"
        )
    except RuntimeError:
        log.exception("boom", chat="qq:group:1", msg="m1")
    text = stream.getvalue()
    lines = [json.loads(line) for line in text.splitlines()]
    assert [line["event"] for line in lines] == ["connected", "provider said", "boom"]
    assert lines[2]["chat"] == "qq:group:1" and lines[2]["msg"] == "m1"
    for secret in ("my-config-token-123", "sk-proj-abcdefghij", "eyJhbGciOiJIUzI1NiJ9"):
        assert secret not in text
    structlog.reset_defaults()


def test_reply_policy_per_chat() -> None:
    policy = ReplyPolicy(
        "mention",
        ["纳西妲"],
        {
            "qq:group:2": {"policy": "keyword", "keywords": ["天气"]},
            "qq:group:3": {"policy": "never"},
            "qq:group:4": {"policy": "probability", "probability": 0.5},
        },
        rng=random.Random(7),
    )
    group = "qq:group:1"
    assert policy.should_respond(envelope("hi", chat="qq:private:1", to_me=False))
    assert not policy.should_respond(envelope("hi all", chat=group, to_me=False))
    assert policy.should_respond(envelope("hi", chat=group, to_me=True))
    assert policy.should_respond(envelope("今天天气", chat="qq:group:2", to_me=False))
    assert not policy.should_respond(envelope("今天", chat="qq:group:2", to_me=False))
    assert not policy.should_respond(envelope("hi", chat="qq:group:3", to_me=True))
    assert not policy.accepts_command(envelope("/help", chat="qq:group:3", to_me=False))
    assert not policy.accepts_command(envelope("/help", chat=group, to_me=False))
    assert policy.accepts_command(envelope("/help", chat=group, to_me=True))
    assert ReplyPolicy("always").accepts_command(envelope("/help", chat=group, to_me=False))
    answered = sum(
        policy.should_respond(envelope("x", chat="qq:group:4", to_me=False)) for _ in range(400)
    )
    assert 140 < answered < 260
    prefix = ReplyPolicy("prefix", ["纳西妲"])
    assert prefix.should_respond(envelope("纳西妲 在吗", chat=group, to_me=False))
    assert not prefix.should_respond(envelope("在吗", chat=group, to_me=False, role=Role.ADMIN))


async def test_inbound_server_serves_mounted_routes_on_one_port() -> None:
    server = InboundServer("127.0.0.1", 0)
    assert not server.needed

    async def hello(request: web.Request) -> web.Response:
        return web.json_response({"path": request.path})

    server.add_route("GET", "/a", hello)
    server.add_route("POST", "/b", hello)
    assert server.needed
    await server.start()
    try:
        assert server.port != 0
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{server.port}/a") as response:
                assert await response.json() == {"path": "/a"}
            async with session.post(f"http://127.0.0.1:{server.port}/b") as response:
                assert response.status == 200
    finally:
        await server.stop()


class Counting:
    """A job that records each run and fails when told to."""

    def __init__(self, name: str, runs: list[str], *, fails: bool) -> None:
        self.name = name
        self.schedule = Schedule(every=0.05)
        self.runs = runs
        self.fails = fails

    async def run(self, ctx: JobContext) -> None:
        self.runs.append(self.name)
        if self.fails:
            raise RuntimeError("job failed")


async def test_a_failing_job_does_not_stop_the_scheduler() -> None:
    runs: list[str] = []
    scheduler = Scheduler()
    scheduler.add(Counting("bad", runs, fails=True))
    scheduler.add(Counting("good", runs, fails=False))
    async with asyncio.TaskGroup() as group:
        scheduler.start(group)
        try:
            for _ in range(100):
                if runs.count("good") >= 2 and runs.count("bad") >= 2:
                    break
                await asyncio.sleep(0.02)
        finally:
            await scheduler.stop()
    assert runs.count("bad") >= 2 and runs.count("good") >= 2
