"""History import benchmark: `nahida history import` of N turns spread over C chats.

Writes a JSONL file of ordinary chat lines (tests/data/chat_lines_zh_en.txt, `--joined` of them
per message, each message made distinct by a counter), several speakers per chat, one message
every few minutes with a long gap now and then (so sessions split), and runs the real command in
a subprocess, the way people run it, on a fresh data folder. Prints turns/s (the command's own
figure and wall time) per run and the median.

    .venv/bin/python scripts/bench_import.py                  # 100,000 turns, 1,000 chats, 3 runs
    .venv/bin/python scripts/bench_import.py --repo ../other  # the same file, another checkout
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_file(path: Path, turns: int, chats: int, seed: int, joined: int = 1) -> None:
    rng = random.Random(seed)
    lines = (ROOT / "tests" / "data" / "chat_lines_zh_en.txt").read_text("utf-8").splitlines()
    lines = [line for line in lines if line.strip()]
    start = datetime(2024, 1, 1, tzinfo=UTC)
    clock = [start + timedelta(minutes=rng.randrange(600)) for _ in range(chats)]
    with path.open("w", encoding="utf-8") as out:
        for n in range(turns):
            c = rng.randrange(chats)
            gap = (
                timedelta(hours=20) if rng.random() < 0.01 else timedelta(minutes=rng.randint(1, 9))
            )
            clock[c] += gap
            kind = "group" if c % 4 else "private"  # a private chat's key names its person
            record = {
                "chat": f"import:{kind}:{'g' if kind == 'group' else 'u'}{c}",
                "user": f"u{c}" if kind == "private" else f"u{rng.randrange(8)}",
                "name": f"User {rng.randrange(8)}",
                "text": "".join(rng.choice(lines) for _ in range(joined)) + f" #{n}",
                "time": clock[c].isoformat(),
                "message_id": str(n),
                "role": "assistant" if rng.random() < 0.15 else "user",
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def run_import(repo: Path, data: Path, file: Path) -> tuple[float, float]:
    """(the command's turns/s, wall-clock turns/s) of one import into a fresh data folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NAHIDA")}
    env["PYTHONPATH"] = str(repo)
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "nahida",
            "--data-dir",
            str(data),
            "history",
            "import",
            str(file),
            "--json",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - started
    report = json.loads(done.stdout)
    handled = report["imported"] + report["duplicates"]
    return float(report["turns_per_s"]), handled / wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--chats", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--joined", type=int, default=1, help="chat lines per message (3: ~80 characters)"
    )
    parser.add_argument("--repo", type=Path, default=ROOT, help="checkout whose code imports")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nahida-bench-import-") as tmp:
        file = Path(tmp) / "history.jsonl"
        write_file(file, args.turns, args.chats, args.seed, args.joined)
        rows = []
        for n in range(args.runs):
            rate, wall = run_import(args.repo.resolve(), Path(tmp) / f"data{n}", file)
            rows.append((rate, wall))
            print(f"run {n + 1}: {rate:,.0f} turns/s ({wall:,.0f} wall)", file=sys.stderr)
    print(
        f"# bench_import: {args.turns:,} turns in {args.chats:,} chats,"
        f" {args.joined} chat line(s) per message ({args.repo.resolve().name})"
    )
    print()
    print("| run | turns/s (import) | turns/s (wall, process start included) |")
    print("|---|---|---|")
    for n, (rate, wall) in enumerate(rows, start=1):
        print(f"| {n} | {rate:,.0f} | {wall:,.0f} |")
    rate = statistics.median(r for r, _ in rows)
    wall = statistics.median(w for _, w in rows)
    print(f"| median | {rate:,.0f} | {wall:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
