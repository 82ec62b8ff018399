"""Running episodes on a worker pool so that a run can always be stopped and leaves nothing behind.

- **Bounded submission.** At most ``2 × workers`` episodes are queued at a time; the next is
  submitted as one finishes. Queued work never piles up in the pool.
- **Ctrl-C (SIGINT) stops promptly.** Queued episodes are cancelled, never run; process workers are
  terminated (their running episodes are lost — they were not finished); the interrupt is re-raised.
  What finished before was handed to ``on_result`` as it finished (the evaluation appends it to
  ``traces.jsonl``), so a rerun resumes. Process workers ignore SIGINT themselves: a terminal's
  Ctrl-C reaches the whole process group, and only the parent decides what stops. Thread workers
  cannot be killed: an episode already running in a thread ends on its own, nothing new starts.
- **No orphans after SIGKILL.** A killed parent cannot clean up, so process workers watch it
  (:func:`guard_worker`). The pool uses the ``forkserver`` start method, so a worker's parent is the
  fork server, which Python ends when the run's process dies (it reads EOF on its "alive" pipe).
  On Linux each worker asks the kernel for SIGKILL when its parent dies
  (``prctl(PR_SET_PDEATHSIG)`` via ctypes); everywhere a daemon thread also checks every
  ``WATCH_S`` seconds that its parent and the run's process are still there, and exits if not.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, wait
from itertools import islice
from typing import Any

WATCH_S = 0.5  # how often a worker checks that the run's process is alive
PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def _pdeathsig() -> bool:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux); True when set."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed process not yet reaped is a zombie: dead for our purpose
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _watch(parent: int, main_pid: int) -> None:
    while True:
        time.sleep(WATCH_S)
        if os.getppid() != parent or not _alive(main_pid):
            os._exit(1)


def guard_worker(main_pid: int) -> None:
    """Make this pool worker die with the run (see the module docstring); call it first in the
    worker's initializer. It also ignores SIGINT (the parent stops the pool)."""
    parent = os.getppid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _pdeathsig()
    if os.getppid() != parent or not _alive(main_pid):  # the parent died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch, args=(parent, main_pid), daemon=True, name="fasbench-parent-watch").start()


def stop(pool: Executor) -> None:
    """Cancel queued work and terminate process workers now."""
    pool.shutdown(wait=False, cancel_futures=True)
    procs = list((getattr(pool, "_processes", None) or {}).values())  # ProcessPoolExecutor's workers
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.time() + 5
    for p in procs:
        p.join(max(0.0, deadline - time.time()))
        if p.is_alive():
            p.kill()


def run_pool(
    pool: Executor, fn: Callable, items: Iterable[Sequence[Any]], on_result: Callable[[Any], None], workers: int
) -> None:
    """Run ``fn(*item)`` for every item on ``pool`` with at most ``2 × workers`` queued; hand each
    result to ``on_result`` (in the calling thread) as it finishes. On any exception, including
    KeyboardInterrupt, the pool is stopped (:func:`stop`) and the exception re-raised; otherwise
    the pool is shut down cleanly."""
    it = iter(items)
    try:
        pending = {pool.submit(fn, *x) for x in islice(it, 2 * workers)}
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in finished:
                on_result(f.result())
                for x in islice(it, 1):
                    pending.add(pool.submit(fn, *x))
    except BaseException:
        stop(pool)
        raise
    pool.shutdown(wait=True)
