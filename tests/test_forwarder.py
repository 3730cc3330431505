"""wl-fwd, the loopback forwarder inside an external agent's container: built static from our C
source, mounted read-only, it relays 127.0.0.1:PORT to the proxy's Unix socket (both ways, half
close included), and says 502 when the proxy is gone."""

from __future__ import annotations

import os
import socket
import tempfile
import threading

import pytest

from sandbox import DEFAULT_BASE, Limits, Mount
from sandbox.docker import DockerSandbox, native

pytestmark = pytest.mark.docker

CLIENT = r"""
import socket, sys
s = socket.create_connection(("127.0.0.1", 8765), timeout=10)
s.sendall(b"x" * 300000)
s.shutdown(socket.SHUT_WR)          # half close: the server sees the end, and still answers
data = b""
while chunk := s.recv(65536):
    data += chunk
print(len(data), data[:40])
"""


def echo_server(path: str) -> threading.Thread:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o666)
    server.listen(4)

    def run() -> None:
        conn, _ = server.accept()
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
        conn.sendall(b"got %d bytes " % len(received) + received[:100000])
        conn.close()
        server.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_forwarder_relays_and_reports_a_missing_proxy():
    fwd = native.binary("wl-fwd")
    with tempfile.TemporaryDirectory(prefix="wl-fwd-") as folder:
        os.chmod(folder, 0o755)
        thread = echo_server(f"{folder}/proxy.sock")
        mounts = (Mount(str(fwd), "/opt/wl/bin/wl-fwd"), Mount(folder, "/run/wl"))
        with DockerSandbox.start(DEFAULT_BASE, limits=Limits(), workdir="/", mounts=mounts) as box:
            start = box.exec(["/opt/wl/bin/wl-fwd", "-d", "8765", "/run/wl/proxy.sock"])
            assert start.ok, start.stderr
            out = box.exec(["python3", "-c", CLIENT])
            assert out.ok, out.stderr
            assert out.stdout.startswith("100017 b'got 300000 bytes xxxx"), out.stdout
            thread.join(timeout=10)
            os.unlink(f"{folder}/proxy.sock")  # the proxy is gone
            gone = box.exec(
                ["python3", "-c", CLIENT.replace('b"x" * 300000', 'b"GET /v1/models HTTP/1.1\\r\\n\\r\\n"')]
            )
            assert gone.ok and "502 Bad Gateway" in gone.stdout, gone.stdout + gone.stderr
            # the binary is ours and read-only: the agent cannot replace it
            write = box.exec(["/bin/sh", "-c", "echo x > /opt/wl/bin/wl-fwd"])
            assert not write.ok and "Read-only" in write.stderr
