"""Run every benchmark module (bench/bench_*.py) and write docs/benchmarks.md.

Each module exposes `run(quick: bool = False) -> str`, a Markdown section. The page records the
machine and the date, because a number without its machine means nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import os
import platform
import sys
from pathlib import Path

MODULES = ["bench.bench_matcher", "bench.bench_storage", "bench.bench_slack", "bench.bench_health"]


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores visible, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", type=Path, help="write the Markdown page here")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run, not a measurement")
    parser.add_argument("--only", action="append", help="run only these modules (e.g. bench.bench_matcher)")
    args = parser.parse_args()
    sections = []
    for name in args.only or MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            print(f"skipping {name}: {exc}", file=sys.stderr)
            continue
        print(f"running {name} ...", file=sys.stderr, flush=True)
        sections.append(module.run(quick=args.quick))
    header = (
        "# Benchmarks\n\n"
        f"Measured {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')} on {machine()}.\n"
        "Regenerate with `make bench` (writes this page). Timings are wall-clock on an otherwise idle machine.\n"
    )
    page = header + "\n" + "\n\n".join(sections) + "\n"
    if args.write:
        args.write.write_text(page, encoding="utf-8")
        print(f"wrote {args.write}", file=sys.stderr)
    else:
        print(page)


if __name__ == "__main__":
    main()
