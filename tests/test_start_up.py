"""A one-line triage starts light: the knowledge cache, and no library it does not need."""

from __future__ import annotations

import subprocess
import sys

PROBE = (
    "import sys; from triage_bot.core import triage; "
    "answer = triage('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'); "
    "print(answer.match.id, *sorted(m for m in ('yaml', 'prometheus_client', 'alembic', 'sqlalchemy', 'numpy') "
    "if m in sys.modules))"
)


def test_a_triage_from_a_warm_cache_imports_no_yaml_metrics_or_database() -> None:
    runs = [
        subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120)
        for _ in range(2)
    ]
    assert runs[0].stdout.split()[0] == "generic.cuda_oom"
    assert runs[1].stdout.split() == ["generic.cuda_oom"]  # the first run filled the cache


def test_warming_compiles_every_pattern_before_the_first_paste() -> None:
    from triage_bot.core import Triager
    from triage_bot.kb.loader import load
    from triage_bot.kb.regex import compile_pattern

    triager = Triager(load())
    assert triager.warm() > 500  # every signature's examples and messages
    before = compile_pattern.cache_info().misses
    triager.match(
        "(EngineCore_DP0 pid=1) ERROR 05-13 10:46:43 [core.py:1] RuntimeError: CUDA error: an illegal "
        "memory access was encountered\nValueError: No available memory for the cache blocks."
    )
    assert compile_pattern.cache_info().misses == before


def test_warming_stops_when_asked() -> None:
    import threading

    from triage_bot.core import Triager
    from triage_bot.kb.loader import load

    stop = threading.Event()
    stop.set()
    assert Triager(load()).warm(stop=stop) == 0
