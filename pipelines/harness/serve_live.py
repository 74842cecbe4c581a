"""Start `lopub serve` as a real process on 127.0.0.1: the live and browser tests and `bench_serve`."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running(collections: dict[str, Path], store: Path, *extra: str, port: int | None = None):
    """Yield the base URL of a `lopub serve` process; stop it (by its pid) afterwards."""
    port = port or free_port()
    args = [sys.executable, "-m", "lopub", "serve", *[f"{n}={p}" for n, p in collections.items()],
            "--store", str(store), "--port", str(port), *extra]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_up(base, proc)
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_up(base: str, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"lopub serve exited {proc.returncode}: {proc.stdout.read()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base}/api/collections", timeout=2) as r:
                json.loads(r.read())
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("lopub serve did not answer within 30 s")


def get(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())
