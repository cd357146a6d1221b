"""A warm parent for `analysis.isolated`'s children: each child forked from a process that has already
imported the readers and scorers, instead of a fresh `python -m analysis.isolated`.

A fresh child spends about 0.6 s of CPU importing pandas, Arrow and the package before it reads a byte; a
workspace run's whole job is about 1 s. The warm parent (`python -m analysis.forking FD`, one per process
that isolates work, started at its first job) imports them once and then only forks: each child is a copy
with those modules loaded and nothing else done (no thread of ours, no store, no cache, no connection),
which then runs exactly what a fresh child runs (`analysis.isolated._child`), with the caller's
environment, working folder and limits.

The caller hands the parent, per child, the child's two pipe ends (its input and its output) and a socket
over one message of a Unix socket pair (`socket.send_fds`); the parent forks, closes its copies, and answers
on that socket the child's process id, later its exit code (as `subprocess.Popen.returncode` gives it). A
byte sent on the socket asks the parent to kill the child (it alone may: it has not reaped it yet). The
parent exits when the caller's end of the pair closes (the caller exited).

`Forks.spawn` returns None when there is no parent to fork from (no `fork` on this system, or the parent
could not start, died, or did not answer in time): `analysis.isolated` then starts a fresh child, as before.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
_NUMBER = struct.Struct("q")
# How long a child's process id may take to come back. A running parent forks in milliseconds; one started
# for this spawn imports its preload first (a few seconds, a minute on a machine whose cores are all busy). A
# parent that has not answered by then (stopped, stuck) is killed, and the caller starts a fresh child.
REPLY_SECONDS = 30.0
START_REPLY_SECONDS = 300.0


class Forked:
    """A child forked by the warm parent, answering like `subprocess.Popen`: `pid`, `stdin`, `stdout`,
    `wait(timeout)` (raises `subprocess.TimeoutExpired`), `kill()` and `returncode`."""

    def __init__(self, pid: int, reply: socket.socket, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.pid = pid
        self.stdin: IO[bytes] | None = stdin
        self.stdout: IO[bytes] | None = stdout
        self.returncode: int | None = None
        self._reply = reply
        self._done = threading.Event()
        threading.Thread(target=self._await_exit, daemon=True, name=f"forked-{pid}").start()

    def _await_exit(self) -> None:
        code = _receive_number(self._reply)
        # No exit code: the parent went away first (killed). The child, if still running, is no longer
        # ours to wait for; its output has already ended for whoever reads it.
        self.returncode = -signal.SIGKILL if code is None else code
        self._done.set()
        with contextlib.suppress(OSError):
            self._reply.close()

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(["analysis.isolated", str(self.pid)], timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if not self._done.is_set():
            with contextlib.suppress(OSError):
                self._reply.send(b"k")


class Forks:
    """The caller's side: the warm parent, started at the first `spawn` and again if it has died.
    `preload`: the modules the parent imports before its first fork (importing them must start no thread
    of ours; Arrow's allocator and OpenBLAS keep threads of their own, which they re-create in a child).
    `entry`: the function (`module.name`) a child calls once its environment and folder are the caller's."""

    def __init__(self, preload: tuple[str, ...], entry: str) -> None:
        self._preload = preload
        self._entry = entry
        self._code: int | None = None  # the package's code when the parent started (`_code_stamp`)
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._failed = not hasattr(os, "fork") or not hasattr(socket, "send_fds")

    def _start(self, env: dict[str, str]) -> bool:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "analysis.forking", str(theirs.fileno()), self._entry, *self._preload],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=env,
                pass_fds=(theirs.fileno(),),
            )
        except OSError:
            ours.close()
            self._failed = True
            return False
        finally:
            theirs.close()
        self._control = ours
        return True

    def _stop(self) -> None:
        """The parent's end: closing its control socket ends it (its children go on to their end)."""
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(5)
            self._process = None

    def spawn(self, env: dict[str, str]) -> Forked | None:
        """A child forked by the warm parent (started with `env` when it must start), or None."""
        if self._failed:
            return None
        child_in, stdin = os.pipe()
        stdout, child_out = os.pipe()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        wait = REPLY_SECONDS
        try:
            with self._lock:
                code = _code_stamp()
                if self._process is None or self._process.poll() is not None or code != self._code:
                    self._stop()
                    self._code = code
                    if not self._start(env):
                        raise OSError("no warm parent")
                    wait = START_REPLY_SECONDS
                assert self._control is not None
                parent = self._process
                socket.send_fds(self._control, [b"f"], [child_in, child_out, theirs.fileno()])
        except OSError:
            for fd in (stdin, stdout):
                os.close(fd)
            mine.close()
            return None
        finally:
            for fd in (child_in, child_out):
                os.close(fd)
            theirs.close()
        mine.settimeout(wait)
        try:
            pid = _receive_number(mine)
        except TimeoutError:  # a parent that does not answer forks for no one again
            pid = None
            with self._lock:
                if self._process is parent:
                    self._abandon()
        mine.settimeout(None)
        if pid is None:  # the parent could not fork, died meanwhile, or did not answer: a fresh child instead
            os.close(stdin)
            os.close(stdout)
            mine.close()
            return None
        return Forked(pid, mine, os.fdopen(stdin, "wb"), os.fdopen(stdout, "rb"))

    def _abandon(self) -> None:
        """A parent that stopped answering: killed (closing its socket would not end a stopped process)."""
        if self._process is not None:
            with contextlib.suppress(OSError):
                self._process.kill()
        self._stop()


def _code_stamp() -> int:
    """The latest modification (ns) of the package's Python files: a parent started before an edit (a
    server left running while its code changes) would fork children running the old code, so it is
    replaced. About a millisecond."""
    return max((path.stat().st_mtime_ns for path in ROOT.joinpath("analysis").rglob("*.py")), default=0)


def _receive_number(sock: socket.socket) -> int | None:
    data = b""
    while len(data) < _NUMBER.size:
        try:
            part = sock.recv(_NUMBER.size - len(data))
        except TimeoutError:
            raise
        except OSError:
            return None
        if not part:
            return None
        data += part
    return int(_NUMBER.unpack(data)[0])


# --- the warm parent -------------------------------------------------------------------------------------


def _serve(control: socket.socket, entry: str, preload: list[str]) -> None:
    """Fork a child for each message on `control` until it closes; report each child's id and exit. A child
    calls `entry` (`module.name`)."""
    for name in preload:
        importlib.import_module(name)
    woken_r, woken_w = os.pipe()  # SIGCHLD wakes the select below (a child to reap)
    os.set_blocking(woken_w, False)
    os.set_blocking(woken_r, False)
    signal.set_wakeup_fd(woken_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    replies: dict[int, socket.socket] = {}  # live child -> its caller's socket
    listening: dict[socket.socket, int] = {}  # the sockets a kill may come on
    while True:
        watched: list[Any] = [control, woken_r, *listening]  # sockets and the wake-up pipe's fd
        readable, _, _ = select.select(watched, [], [])
        for ready in readable:
            if ready is control:
                try:
                    _, fds, _, _ = socket.recv_fds(control, 16, 3)
                except OSError:
                    return
                if len(fds) != 3:  # the caller closed its end: it has exited
                    for fd in fds:
                        os.close(fd)
                    return
                child_in, child_out, reply_fd = fds
                reply = socket.socket(fileno=reply_fd)
                try:
                    pid = os.fork()
                except OSError:
                    pid = -1
                if pid == 0:
                    _child(entry, child_in, child_out, [control, *replies.values(), reply], (woken_r, woken_w))
                os.close(child_in)
                os.close(child_out)
                if pid < 0:
                    reply.close()  # no id: the caller starts a fresh child
                    continue
                with contextlib.suppress(OSError):
                    reply.sendall(_NUMBER.pack(pid))
                replies[pid] = reply
                listening[reply] = pid
            elif ready == woken_r:
                with contextlib.suppress(OSError):
                    os.read(woken_r, 512)
            else:
                pid = listening[ready]
                try:
                    asked = ready.recv(16)
                except OSError:
                    asked = b""
                if asked:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                else:  # the caller no longer listens; the child is still reaped below
                    del listening[ready]
        _reap(replies, listening)


def _reap(replies: dict[int, socket.socket], listening: dict[socket.socket, int]) -> None:
    while replies:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        reply = replies.pop(pid, None)
        if reply is None:
            continue
        listening.pop(reply, None)
        with contextlib.suppress(OSError):
            reply.sendall(_NUMBER.pack(os.waitstatus_to_exitcode(status)))
        reply.close()


def _child(entry: str, child_in: int, child_out: int, sockets: list[socket.socket], woken: tuple[int, int]) -> None:
    """In the forked child: its pipes as its input and output, nothing of the parent's kept, the caller's
    environment and folder (read first from the input), then `entry()` (for `analysis.isolated`, what a
    fresh `python -m analysis.isolated` does). Never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for sock in sockets:
            sock.close()
        for fd in woken:
            os.close(fd)
        os.dup2(child_in, 0)
        os.dup2(child_out, 1)
        os.close(child_in)
        os.close(child_out)
        try:
            environment, folder = pickle.load(sys.stdin.buffer)  # the caller's own, written before the job
        except EOFError:  # nothing came: the caller was gone (interrupted) before it wrote
            raise SystemExit(1) from None
        os.environ.clear()
        os.environ.update(environment)
        os.chdir(folder)
        module, _, name = entry.rpartition(".")
        getattr(importlib.import_module(module), name)()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except KeyboardInterrupt:  # Ctrl-C on the caller's terminal, before the job ran: the caller says so
        code = 130
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def preamble(env: dict[str, Any]) -> bytes:
    """What the caller writes to a forked child's input before the job: its environment and folder."""
    return pickle.dumps((dict(env), os.getcwd()), protocol=pickle.HIGHEST_PROTOCOL)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C on the server's terminal reaches its group
        _serve(socket.socket(fileno=int(sys.argv[1])), sys.argv[2], sys.argv[3:])
