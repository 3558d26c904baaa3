"""One pass over every engine: async httpx, a deadline per engine, bounded concurrency, capped bodies.

- Each engine has one deadline for its whole check (`timeout_s`); every request gets what is left
  of it. httpx's own timeouts are per read, so a server that drips one byte a second would never
  trip them: the deadline is enforced with asyncio around each request as well.
- Bodies are streamed and abandoned past `max_body_bytes`, so a 50 MB reply costs at most the cap.
- At most `concurrency` engines are in flight; a hung engine holds one slot until its deadline.
- GET only, plus vLLM's optional 1-token completion. No proxies from the environment, no
  redirects followed: the bot talks to exactly the URL in engines.yaml.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from triage_bot.health.config import EngineConfig, EnginesFile
from triage_bot.health.observation import Observation
from triage_bot.health.probes import BadResponse, ProbeError, Refused, Response, TimedOut, get_probe

USER_AGENT = "triage-bot-health/1"


def utcnow() -> datetime:
    return datetime.now(UTC)


class _EngineHttp:
    """The Http a probe sees: every request bounded by the engine's deadline and the body cap."""

    def __init__(self, client: httpx.AsyncClient, deadline: float, max_body: int):
        self.client = client
        self.deadline = deadline
        self.max_body = max_body

    async def get(self, url: str, headers: dict[str, str]) -> Response:
        return await self._request("GET", url, headers, None)

    async def post_json(self, url: str, payload: dict[str, Any], headers: dict[str, str]) -> Response:
        return await self._request("POST", url, headers, payload)

    async def _request(self, method: str, url: str, headers: dict[str, str], payload: Any) -> Response:
        loop = asyncio.get_running_loop()
        remaining = self.deadline - loop.time()
        if remaining <= 0:
            raise TimedOut("no time left in this check's deadline")
        started = time.perf_counter()
        try:
            async with asyncio.timeout_at(self.deadline):
                async with self.client.stream(
                    method, url, headers=headers, json=payload, timeout=httpx.Timeout(remaining)
                ) as response:
                    declared = response.headers.get("content-length")
                    if declared and declared.isdigit() and int(declared) > self.max_body:
                        raise BadResponse(
                            f"body of {int(declared):,} bytes is over the {self.max_body:,}-byte cap"
                        )
                    chunks: list[bytes] = []
                    size = 0
                    async for chunk in response.aiter_raw():
                        size += len(chunk)
                        if size > self.max_body:
                            raise BadResponse(f"body over the {self.max_body:,}-byte cap")
                        chunks.append(chunk)
                    body = b"".join(chunks)
                    if response.headers.get("content-encoding"):
                        body = _decode(response, body)
                    return Response(response.status_code, body, time.perf_counter() - started)
        except ProbeError:
            raise
        except (TimeoutError, httpx.TimeoutException):
            raise TimedOut(f"timed out after {time.perf_counter() - started:.1f} s") from None
        except httpx.ConnectError as exc:
            # only say "refused" when the OS said so: on call, "refused" means "nothing listens there",
            # while an unreachable host or a dropped SYN sends people to the network instead
            text = str(exc).lower()
            reason = "connection refused" if "refused" in text else f"cannot connect: {str(exc)[:80]}"
            raise Refused(reason) from None
        except httpx.RemoteProtocolError as exc:
            raise BadResponse(f"not a valid HTTP response: {str(exc)[:80]}") from None
        except httpx.HTTPError as exc:
            raise ProbeError(f"{type(exc).__name__}: {str(exc)[:80]}") from None


def _decode(response: httpx.Response, body: bytes) -> bytes:
    """Undo gzip/deflate by hand (raw stream was read so the cap applied to wire bytes)."""
    import zlib

    encoding = response.headers.get("content-encoding", "").lower()
    if encoding in ("gzip", "deflate"):
        try:
            decoder = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
            out = decoder.decompress(body, 64 * 1024 * 1024)
            if decoder.unconsumed_tail:
                raise BadResponse("decompressed body over 64 MiB")
            return out
        except zlib.error as exc:
            raise BadResponse(f"bad {encoding} body: {exc}") from None
    return body


class Poller:
    """Checks engines; one small httpx client per engine, kept so keep-alive survives between passes.

    One client per engine rather than one shared pool: httpcore scans every pooled connection for
    each request, which turns a shared pool over a thousand origins quadratic (measured: 40 s of
    CPU for 300 engines, against well under a second with a pool per engine). The TLS context is
    built once and shared, since building one per client is the expensive part.
    """

    def __init__(
        self,
        config: EnginesFile,
        *,
        clock: Callable[[], datetime] = utcnow,
        transport: httpx.AsyncBaseTransport | None = None,
    ):
        self.config = config
        self.clock = clock
        self._transport = transport
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._ssl: ssl.SSLContext | None = None

    def _client_for(self, engine: EngineConfig) -> httpx.AsyncClient:
        client = self._clients.get(engine.name)
        if client is None:
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            client = httpx.AsyncClient(
                limits=httpx.Limits(max_connections=4, max_keepalive_connections=4, keepalive_expiry=120),
                trust_env=False,
                follow_redirects=False,
                verify=self._ssl,
                headers={"User-Agent": USER_AGENT, "Accept-Encoding": "identity"},
                transport=self._transport,
            )
            self._clients[engine.name] = client
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()

    async def check_all(self, engines: Sequence[EngineConfig] | None = None) -> list[Observation]:
        """Check every engine (or `engines`) once; results in input order. Never raises for an engine."""
        targets = list(self.config.engines if engines is None else engines)
        semaphore = asyncio.Semaphore(self.config.poller.concurrency)

        async def one(engine: EngineConfig) -> Observation:
            async with semaphore:
                return await self.check(engine)

        return list(await asyncio.gather(*(one(e) for e in targets)))

    async def check(self, engine: EngineConfig) -> Observation:
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + engine.timeout
        http = _EngineHttp(self._client_for(engine), deadline, self.config.poller.max_body_bytes)
        now = self.clock()
        try:
            async with asyncio.timeout_at(deadline + 0.5):  # belt and braces around the probe itself
                obs = await get_probe(engine.kind).probe(http, engine, now)
        except TimeoutError:
            obs = Observation(
                engine.name, engine.kind, now, "timeout", detail=f"timed out after {engine.timeout:.1f} s"
            )
        except Exception as exc:  # a probe bug must not stop the pass for the other engines
            obs = Observation(
                engine.name,
                engine.kind,
                now,
                "error",
                detail=f"probe error: {type(exc).__name__}: {exc}"[:200],
            )
        obs.elapsed_s = loop.time() - started
        return obs


def check_once(config: EnginesFile, engines: Sequence[EngineConfig] | None = None) -> list[Observation]:
    """A synchronous single pass with a fresh client (CLI, scheduler thread)."""

    async def run() -> list[Observation]:
        poller = Poller(config)
        try:
            return await poller.check_all(engines)
        finally:
            await poller.aclose()

    return asyncio.run(run())
