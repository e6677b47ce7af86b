"""GIL benchmark: why the database thread and the event loop share one core, not two.

Runs short SQLite queries (the size of the pipeline's: an indexed range count, tens of µs) on a
second thread, alone and then beside a thread busy with Python, as the event loop is during a
burst. SQLite gives up the GIL while it steps a statement, but the thread then has to win it
back before its next line of Python, and a busy thread hands it over only every
`sys.getswitchinterval()` (5 ms): short statements wait for that turn each time. Prints wall
time per query and how much of a core the busy thread got, at a few switch intervals.

    .venv/bin/python scripts/bench_gil.py
    .venv/bin/python scripts/bench_gil.py --queries 1000 --rows 2000
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nahida.memory.store.sqlite.connection import driver  # the driver Nahida uses


def _queries(conn: object, queries: int, rows: int) -> float:
    started = time.perf_counter()
    for i in range(queries):
        low = i * 37 % 150_000
        conn.execute(  # type: ignore[attr-defined]
            "SELECT count(*) FROM t WHERE x BETWEEN ? AND ?", (low, low + rows)
        ).fetchone()
    return time.perf_counter() - started


def _beside_busy_thread(conn: object, queries: int, rows: int) -> tuple[float, float]:
    """Wall time of the queries while another thread runs Python; that thread's CPU share."""
    stop = threading.Event()
    busy_cpu: list[float] = []

    def spin() -> None:
        started = time.thread_time()
        while not stop.is_set():
            sum(range(50))
        busy_cpu.append(time.thread_time() - started)

    spinner = threading.Thread(target=spin)
    spinner.start()
    time.sleep(0.05)
    seconds = _queries(conn, queries, rows)
    stop.set()
    spinner.join()
    return seconds, busy_cpu[0] / (seconds + 0.05)


def main(queries: int, rows: int) -> None:
    conn = driver.connect(":memory:", check_same_thread=False)
    conn.execute("CREATE TABLE t (x INTEGER PRIMARY KEY, y TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", ((i, str(i) * 5) for i in range(200_000)))
    default = sys.getswitchinterval()
    print(f"# bench_gil: {queries} queries counting {rows} rows each ({driver.__name__})")
    print()
    print("| setting | wall time | per query | the busy thread's share of a core |")
    print("|---|---|---|---|")
    alone = _queries(conn, queries, rows)
    print(f"| queries alone | {alone:.2f} s | {alone / queries * 1e6:.0f} µs | — |")
    for interval in (default, 0.0005, 0.00005):
        sys.setswitchinterval(interval)
        seconds, share = _beside_busy_thread(conn, queries, rows)
        print(
            f"| beside a busy Python thread, switch interval {interval * 1000:g} ms"
            f" | {seconds:.2f} s | {seconds / queries * 1e6:.0f} µs | {share:.2f} |"
        )
    sys.setswitchinterval(default)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--rows", type=int, default=200)
    args = parser.parse_args()
    main(args.queries, args.rows)
