"""A TCP proxy in front of a real server that can start hanging: it keeps every connection open
and stops passing bytes either way, as a wedged load balancer or a frozen server does. Started
hanging (`hanging_server()`), it is a server that accepts and never answers."""

from __future__ import annotations

import select
import socket
import threading


class HangableProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.hanging = threading.Event()
        self.accepted = 0
        self._stop = threading.Event()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def hang(self) -> None:
        self.hanging.set()

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                continue
            self.accepted += 1
            if self.hanging.is_set():
                self._pairs.append((client, client))  # held open, never answered
                continue
            upstream = socket.create_connection(self.target)
            self._pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while not self._stop.is_set():
                ready, _, _ = select.select([a, b], [], [], 0.2)
                if self.hanging.is_set():
                    continue  # bytes stay in the buffers: both sides wait for ever
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (b if sock is a else a).sendall(data)
        except OSError:  # close() shut the sockets under a select() or a recv(): the pump is done
            return

    def close(self) -> None:
        self._stop.set()
        for a, b in self._pairs:
            a.close()
            b.close()
        self.listener.close()

    def __enter__(self) -> HangableProxy:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def hanging_server() -> HangableProxy:
    """A server that accepts every connection and never answers (nothing behind it)."""
    proxy = HangableProxy("127.0.0.1", 9)
    proxy.hang()
    return proxy
