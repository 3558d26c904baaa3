"""Local stand-ins for vLLM, SGLang, trtllm-serve and Triton, shipped like click's test runner.

This module is the harness: the servers, the failure modes and the load model every fake shares.
Each engine's own endpoints live in triage_bot/testing/fakes/<kind>.py, beside its probe.

Each fake listens on its own 127.0.0.1 port and answers exactly what the real server answers per
`../shared/reference/engine_endpoints.md`: the same paths and status codes, empty or plain-text
bodies where the real one has them, and Prometheus pages produced by prometheus_client itself
(sorted labels, `_total` suffixes, `_created` series where the engine runs single-process), so a
probe that passes here parses the real thing. vLLM comes in three metric generations ("new":
0.11+, only `kv_cache_usage_perc`; "both": 0.9.2-0.10; "old": 0.9.1 and before, only
`gpu_cache_usage_perc`). Counters advance with wall-clock time, as real ones do.

Every fake can be switched at any time to a failure mode (`Mode`): refused (the listener is
closed), hang, 503, slow drip, garbage body, a 50 MB body, metrics missing, KV saturation, queue
starvation, stuck generation, flapping, preemption storm, request failures. Each records the
method and path of every request, so tests can assert that the bot only ever reads.

    with FakeEngines() as fakes:
        engine = fakes.add("vllm", name="llama-prod")
        engine.set_mode(Mode.STUCK)
        ... check engine.base_url ...

`python -m triage_bot.testing.fake_engines --count 1000` serves a fleet from a separate process (the
benchmark uses it) and prints one JSON line with every base URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import importlib
import json
import os
import random
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.exposition import generate_latest

HOST = "127.0.0.1"
HUGE_BODY_BYTES = 50 * 1024 * 1024


class Mode(enum.StrEnum):
    HEALTHY = "healthy"
    REFUSED = "refused"
    HANG = "hang"
    HTTP_503 = "503"
    SLOW_DRIP = "slow_drip"
    GARBAGE = "garbage"
    HUGE_BODY = "huge_body"
    METRICS_MISSING = "metrics_missing"
    KV_SATURATED = "kv_saturated"
    STARVATION = "starvation"
    STUCK = "stuck"
    FLAPPING = "flapping"
    PREEMPTION_STORM = "preemption_storm"
    FAILURES = "failures"


@dataclass
class Reply:
    status: int
    body: bytes = b""
    content_type: str | None = "text/plain; charset=utf-8"
    delay: float = 0.0  # seconds before answering (SGLang's health takes ~1 s, 20 s when stuck)
    hang: bool = False
    drip: float = 0.0  # seconds between single bytes of the whole response
    huge: int = 0  # stream this many bytes, chunked, no Content-Length


def json_reply(status: int, obj: Any) -> Reply:
    return Reply(status, json.dumps(obj, separators=(",", ":")).encode(), "application/json")


class _Families:
    """An object with collect(), which is all generate_latest() needs."""

    def __init__(self, families: list[Any]):
        self.families = families

    def collect(self) -> Iterable[Any]:
        return self.families


@dataclass
class Load:
    """The engine's current readings; counters advance by rate × elapsed time on every read."""

    running: float = 8.0
    waiting: float = 0.0
    kv: float = 0.27
    tokens_per_s: float = 400.0
    preemptions_per_s: float = 0.0
    requests_per_s: float = 4.0
    abort_share: float = 0.0


@dataclass
class FakeEngine:
    kind: str
    name: str
    model: str = "meta-llama/Llama-3.1-8B-Instruct"
    generation: str = "new"  # vLLM metric generation: new | both | old
    label_set: str = "new"  # SGLang labels: new (engine_type, tp_rank, pp_rank) | old (model_name only)
    sglang_health_delay: float = 1.0  # a healthy SGLang /health takes about a second
    sglang_health_timeout: float = 20.0  # SGLANG_HEALTH_CHECK_TIMEOUT
    stats_wait: float = 2.0  # trtllm-serve /metrics blocks up to ~2 s when no iteration is queued
    drip_interval: float = 0.2
    perf_metrics: bool = False  # trtllm-serve with return_perf_metrics: Prometheus at /prometheus/metrics
    flap_every: int = 1  # flapping: switch between healthy and 503 every this many health requests
    mode: Mode = Mode.HEALTHY
    port: int = 0
    requests: list[tuple[str, str]] = field(default_factory=list)
    created: float = field(default_factory=time.time)
    # counters
    gen_tokens: float = 27453.0
    prompt_tokens: float = 184320.0
    preemptions: float = 0.0
    finished: dict[str, float] = field(default_factory=lambda: {"stop": 120.0, "length": 11.0, "abort": 0.0})
    iteration: int = 1000
    _last_advance: float = field(default_factory=time.monotonic)
    _pending_iters: float = 0.0
    _health_count: int = 0
    _server: asyncio.AbstractServer | None = None
    _owner: FakeEngines | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    # ------------------------------------------------------------------ control

    def set_mode(self, mode: Mode | str) -> None:
        """Switch failure mode; REFUSED closes the listener, leaving it re-opens on the same port."""
        mode = Mode(mode)
        self.advance()
        self.mode = mode
        self._health_count = 0
        if self._owner is not None:
            self._owner._call(self._apply_listener())

    def load(self) -> Load:
        m = self.mode
        if m is Mode.KV_SATURATED:
            return Load(running=24, waiting=6, kv=0.98, preemptions_per_s=0.0)
        if m is Mode.STARVATION:
            return Load(running=0, waiting=40, kv=0.05, tokens_per_s=0.0, requests_per_s=0.0)
        if m is Mode.STUCK:
            return Load(running=4, waiting=3, kv=0.31, tokens_per_s=0.0, requests_per_s=0.0)
        if m is Mode.PREEMPTION_STORM:
            return Load(running=30, waiting=12, kv=0.93, preemptions_per_s=20.0)
        if m is Mode.FAILURES:
            return Load(requests_per_s=50.0, abort_share=0.4)
        return Load()

    def advance(self) -> None:
        now = time.monotonic()
        dt = max(0.0, now - self._last_advance)
        self._last_advance = now
        load = self.load()
        self.gen_tokens += load.tokens_per_s * dt
        self.prompt_tokens += load.tokens_per_s * 3 * dt
        self.preemptions += load.preemptions_per_s * dt
        done = load.requests_per_s * dt
        self.finished["abort"] += done * load.abort_share
        self.finished["stop"] += done * (1 - load.abort_share) * 0.9
        self.finished["length"] += done * (1 - load.abort_share) * 0.1
        if load.tokens_per_s > 0 or self.mode is Mode.STARVATION:
            self._pending_iters += (
                dt * 20.0
            )  # the executor iterates while it generates, or spins on a blocked queue

    # ------------------------------------------------------------------ routing

    async def _apply_listener(self) -> None:
        if self.mode is Mode.REFUSED:
            if self._server is not None:
                self._server.close()
                self._server = None
                if self._owner is not None:
                    self._owner._drop_connections(self)
        elif self._server is None:
            self._server = await asyncio.start_server(
                self._client_connected,
                HOST,
                self.port,
                reuse_address=True,
            )
            self.port = self._server.sockets[0].getsockname()[1]

    def _client_connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Any:
        assert self._owner is not None
        return self._owner._serve(self, reader, writer)

    def reply(self, method: str, path: str, body: bytes) -> Reply:
        self.requests.append((method, path))
        path = path.split("?", 1)[0]
        m = self.mode
        if m is Mode.HANG:
            return Reply(200, hang=True)
        if m is Mode.SLOW_DRIP:
            inner = self._route(method, path, body, Mode.HEALTHY)
            inner.drip = self.drip_interval
            return inner
        return self._route(method, path, body, m)

    def _is_health(self, path: str) -> bool:
        return path in ("/health", "/health_generate", "/v2/health/ready", "/v2/health/live")

    def _route(self, method: str, path: str, body: bytes, m: Mode) -> Reply:
        if m is Mode.FLAPPING and self._is_health(path):
            if path in ("/health", "/v2/health/ready"):  # one flip per check, not per request
                self._health_count += 1
            bad = self._health_count > 0 and ((self._health_count - 1) // self.flap_every) % 2 == 1
            return self.health_bad(path) if bad else self.health_ok(path)
        if m is Mode.FLAPPING:
            m = Mode.HEALTHY
        if m is Mode.HTTP_503:
            return self.health_bad(path)
        if m is Mode.GARBAGE:
            rnd = random.Random(len(self.requests))
            junk = b"<html><body>502 Bad Gateway</body></html>\n\x00\xff\xfe" + rnd.randbytes(512)
            return Reply(200, junk, "text/html")
        if m is Mode.HUGE_BODY and not self._is_health(path):
            return Reply(200, content_type="text/plain; version=0.0.4; charset=utf-8", huge=HUGE_BODY_BYTES)
        return self.serve(method, path, body, m)

    # ------------------------------------------------------------------ what each kind's module overrides

    OWNED_BY = ""  # `owned_by` in /v1/models

    def serve(self, method: str, path: str, body: bytes, m: Mode) -> Reply:
        """The engine's own endpoints, in mode `m` (the harness has handled the failure modes
        that look the same on every engine)."""
        return json_reply(404, {"detail": "Not Found"})

    def health_ok(self, path: str) -> Reply:
        return Reply(200, b"", None)

    def health_bad(self, path: str) -> Reply:
        """What the health endpoint answers when the engine is down (HTTP_503, a flapping low)."""
        return Reply(503, b"", None)

    def model_card(self) -> dict[str, Any]:
        """The model's entry in /v1/models, as every OpenAI-compatible server lists it."""
        return {"id": self.model, "object": "model", "created": int(self.created), "owned_by": self.OWNED_BY}

    def models_body(self) -> dict[str, Any]:
        return {"object": "list", "data": [self.model_card()]}

    def prometheus(self, families: list[Any]) -> Reply:
        """A Prometheus page of these metric families, written by prometheus_client itself."""
        return Reply(200, generate_latest(_Families(families)), "text/plain; version=0.0.4; charset=utf-8")


def le(bound: float) -> str:
    """A histogram bucket's `le` label as prometheus_client writes it."""
    return repr(float(bound))


def fake_class(kind: str) -> type[FakeEngine]:
    """The fake for an engine kind: triage_bot/testing/fakes/<kind>.py, or an installed plugin's."""
    from triage_bot import plugins
    from triage_bot.testing import fakes

    found = plugins.modules(plugins.FAKES, fakes.__name__, fakes.__path__)
    if kind not in found:
        raise ValueError(f"unknown fake kind {kind!r}; one of {tuple(sorted(found))}")
    cls: type[FakeEngine] = importlib.import_module(found[kind]).FAKE
    return cls


class FakeEngines:
    """Hosts any number of fake engines on one asyncio loop in a background thread."""

    def __init__(self) -> None:
        self.engines: list[FakeEngine] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-engines", daemon=True)
        self._conns: dict[int, set[asyncio.StreamWriter]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._started = False

    def __enter__(self) -> FakeEngines:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if not self._started:
            self._thread.start()
            self._started = True

    def stop(self) -> None:
        if not self._started:
            return
        self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._started = False

    def _call(self, coro: Any) -> Any:
        if threading.current_thread() is self._thread:
            return asyncio.ensure_future(coro)
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=30)

    def add(
        self, kind: str, name: str | None = None, mode: Mode | str = Mode.HEALTHY, **options: Any
    ) -> FakeEngine:
        cls = fake_class(kind)
        self.start()
        engine = cls(kind=kind, name=name or f"{kind}-{len(self.engines)}", mode=Mode(mode), **options)
        engine._owner = self
        self.engines.append(engine)
        if engine.mode is Mode.REFUSED:  # reserve a port that nothing listens on
            engine.mode = Mode.HEALTHY
            self._call(engine._apply_listener())
            engine.set_mode(Mode.REFUSED)
        else:
            self._call(engine._apply_listener())
        return engine

    def add_many(self, kind: str, count: int, **options: Any) -> list[FakeEngine]:
        return [self.add(kind, **options) for _ in range(count)]

    async def _shutdown(self) -> None:
        for engine in self.engines:
            if engine._server is not None:
                engine._server.close()
                engine._server = None
        for writers in self._conns.values():
            for writer in list(writers):
                writer.close()
        for task in list(self._tasks):
            task.cancel()

    def _drop_connections(self, engine: FakeEngine) -> None:
        for writer in list(self._conns.get(id(engine), ())):
            writer.close()

    async def _serve(
        self, engine: FakeEngine, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        conns = self._conns.setdefault(id(engine), set())
        conns.add(writer)
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                try:
                    method, target, _version = line.decode("latin-1").split()
                except ValueError:
                    break
                headers: dict[str, str] = {}
                while True:
                    hline = await reader.readline()
                    if hline in (b"\r\n", b"\n", b""):
                        break
                    key, _, value = hline.decode("latin-1").partition(":")
                    headers[key.strip().lower()] = value.strip()
                body = b""
                if headers.get("content-length", "").isdigit():
                    body = await reader.readexactly(int(headers["content-length"]))
                reply = engine.reply(method, target, body)
                keep = await self._send(writer, reply)
                if not keep or headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError, OSError):
            pass
        finally:
            conns.discard(writer)
            if task is not None:
                self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _send(self, writer: asyncio.StreamWriter, reply: Reply) -> bool:
        if reply.hang:
            await asyncio.Event().wait()  # until the client goes away or the fakes stop
        if reply.delay:
            await asyncio.sleep(reply.delay)
        reason = {
            200: "OK",
            400: "Bad Request",
            404: "Not Found",
            500: "Internal Server Error",
            503: "Service Unavailable",
        }.get(reply.status, "Status")
        head = [
            f"HTTP/1.1 {reply.status} {reason}",
            "server: uvicorn",
            f"date: {time.strftime('%a, %d %b %Y %H:%M:%S GMT', time.gmtime())}",
        ]
        if reply.content_type:
            head.append(f"content-type: {reply.content_type}")
        if reply.huge:
            head.append("transfer-encoding: chunked")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
            chunk = (b"# filler to make a very large page\n" * 2000)[: 64 * 1024]
            sent = 0
            while sent < reply.huge:
                piece = chunk[: min(len(chunk), reply.huge - sent)]
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                sent += len(piece)
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            return True
        head.append(f"content-length: {len(reply.body)}")
        raw = ("\r\n".join(head) + "\r\n\r\n").encode() + reply.body
        if reply.drip:
            for i in range(len(raw)):
                writer.write(raw[i : i + 1])
                await writer.drain()
                await asyncio.sleep(reply.drip)
            return True
        writer.write(raw)
        await writer.drain()
        return True


def main(argv: list[str] | None = None) -> None:
    """Serve a fleet of fakes until stdin closes; print {"engines": [{name, kind, base_url, mode}]}."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument(
        "--kinds", default="vllm,sglang,trtllm", help="comma-separated kinds, used round-robin"
    )
    parser.add_argument("--modes", default="healthy", help="comma-separated modes, used round-robin")
    parser.add_argument("--sglang-health-delay", type=float, default=1.0)
    parser.add_argument("--stats-wait", type=float, default=2.0)
    parser.add_argument("--cpu", type=int, default=None, help="pin this process to one CPU")
    args = parser.parse_args(argv)
    if args.cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8 * args.count + 256)), hard))
    kinds = args.kinds.split(",")
    modes = args.modes.split(",")
    fakes = FakeEngines()
    fakes.start()
    out = []
    for i in range(args.count):
        kind = kinds[i % len(kinds)]
        engine = fakes.add(
            kind,
            name=f"{kind}-{i}",
            mode=modes[i % len(modes)],
            sglang_health_delay=args.sglang_health_delay,
            stats_wait=args.stats_wait,
        )
        out.append({"name": engine.name, "kind": kind, "base_url": engine.base_url, "mode": str(engine.mode)})
    print(json.dumps({"engines": out}), flush=True)
    try:
        sys.stdin.read()
    finally:
        fakes.stop()


if __name__ == "__main__":
    main()
