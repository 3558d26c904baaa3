"""A TCP server that accepts connections and never answers: a database that hangs."""

from __future__ import annotations

import socket
import threading


class HangingServer:
    """Accepts on 127.0.0.1 and holds every connection open, reading nothing, sending nothing."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.connections: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections.append(conn)

    def close(self) -> None:
        self._stop.set()
        for conn in self.connections:
            conn.close()
        self.sock.close()

    def __enter__(self) -> HangingServer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
