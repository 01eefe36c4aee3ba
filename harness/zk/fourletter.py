"""ZooKeeper's four-letter-word admin commands (`srvr`, `ruok`, `cons`, ...) over a plain socket."""

from __future__ import annotations

import socket


def four_letter_word(host: str, port: int, word: str, timeout_s: float = 2.0) -> str:
    """Send a ZooKeeper four-letter command (e.g. `srvr`, `ruok`) and return the whole reply."""
    with socket.create_connection((host, port), timeout=timeout_s) as s:
        s.sendall(word.encode("ascii"))
        chunks: list[bytes] = []
        while True:
            data = s.recv(65536)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks).decode("utf-8", "replace")


def server_mode(host: str, port: int, timeout_s: float = 2.0) -> str | None:
    """`standalone`, `leader` or `follower` when the server serves; None when it does not (yet)."""
    try:
        reply = four_letter_word(host, port, "srvr", timeout_s)
    except OSError:
        return None
    for line in reply.splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None
