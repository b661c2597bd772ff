"""The three-tool system as an MCP server over stdio, for the stdio subject.

Starting the SDK costs a second or more of imports, and the checks start a server for each
source, so the subject starts one *zygote* per module (``zygote <socket> <blocking log>``) that
imports the SDK once and forks a server for each source. The command a source runs
(``launch <socket>``) is small: it hands its stdin and stdout to the zygote, whose forked child
serves MCP on them with the official SDK, and lives as long as that child does; terminating it
terminates the child. ``down`` says on stderr that the system is down and exits at once, as a
server that cannot start does.
"""

from __future__ import annotations

import os
import signal
import socket
import sys


def launch(path: str) -> None:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    socket.send_fds(connection, [b"serve"], [0, 1, 2])
    child = int(connection.recv(32).decode())
    # The child holds the pipes now: the source reads end of stream when the child ends.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)

    def stop(signum: int, _frame: object) -> None:
        os.kill(child, signal.SIGTERM)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # The child keeps its end of the connection until it exits.
    while connection.recv(1):
        pass


def zygote(path: str, log_path: str) -> None:
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from amends_toolkit.conformance import BlockingLog
    from conformance._servers import mcp_server

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen()
    print("ready", flush=True)
    while True:
        connection, _ = listener.accept()
        _, fds, _, _ = socket.recv_fds(connection, 16, 3)
        pid = os.fork()
        if pid == 0:
            listener.close()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            for fd in fds:
                os.close(fd)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            mcp_server(BlockingLog(log_path)).run("stdio")
            os._exit(0)
        connection.sendall(str(pid).encode())
        for fd in fds:
            os.close(fd)
        connection.close()


def main() -> None:
    command, *args = sys.argv[1:]
    if command == "down":
        print("the system is down for maintenance", file=sys.stderr)
        sys.exit(1)
    if command == "launch":
        launch(*args)
    elif command == "zygote":
        zygote(*args)


if __name__ == "__main__":
    main()
