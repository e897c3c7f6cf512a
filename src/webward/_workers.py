"""Bounded conversion: the conversion step of a read, held inside the call's deadline and a
memory limit, with a cap on conversions at once and load shedding past a queue bound.

Where a body is converted (see docs/reading.md, "Bounded conversion"):

    images                   in the calling process (a size read from the header)
    up to 16 KB              in the calling process, on the event loop; once the workers
                             run, only while such conversions have taken little of its time
    text, JSON, XML, MD and  in a thread of the calling process, one body at a time, until
    HTML up to 3,072 tags    the pool's workers run (a server starts them first)
    all else, every PDF      in a worker process of :class:`ConvertPool`

A small page converted on the event loop is not held up by a pool busy with hostile pages,
but a 16 KB table still takes 0.1 s: a burst of 300 held the loop for 6 s, every call past its
deadline. So once the workers run, the event loop converts while its recent conversions have
taken at most :data:`NEARBY_SHARE` of its time (in bursts of :data:`NEARBY_BURST_S`), and the
pool, with its deadline and admission, takes the rest; and a large body of text, linear but
up to a second for 1 MB, goes to the pool too.

A worker is a process forked from a zygote: one helper process per pool (``python -c``, so the
caller's main module is never run again) that has the converters imported and warmed up
(trafilatura, lxml, html-to-markdown, readability; pypdf is imported by a worker's first PDF).
Starting a worker, or replacing a killed one, costs a fork (milliseconds), not the 0.4 s of a
fresh interpreter; a command-line read of a small page starts neither. Each worker runs
under ``RLIMIT_AS`` (``limits.convert_memory_mb``, or the process's own hard limit when that is
lower: ``ulimit -v``) at niceness 10; the pool runs at most
``limits.convert_workers`` conversions at once (one per core by default). A conversion that
outlives the call's deadline (the time left after the read, the wait for a worker included) is
killed with its worker, which is replaced on the next use; one that runs out of memory ends its
worker too, and a worker retires after :data:`RETIRE_AFTER_JOBS` conversions or
:data:`RETIRE_GROWTH_MB` of growth. When the expected wait for a worker and then the conversion
would pass the deadline (or, a backstop, past ``limits.convert_queue`` waiting conversions), a
read is refused at once as ``overloaded`` with a ``retry_after`` (the gateway's 503 and
``Retry-After``) rather than queued.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from . import _content, _convert
from ._convert import Converted
from ._errors import InvalidInput, Reason, Refused, UpstreamError, WebwardError, operator_step
from ._settings import LimitsSettings

if TYPE_CHECKING:  # imported when a worker is first needed: a small read never pays for it
    from multiprocessing.connection import Connection

__all__ = ["CHEAP_HTML_BYTES", "ConvertPool", "Job", "is_cheap", "is_moderate"]

#: HTML bodies up to this size are converted in the calling process (bench/convert.py: the
#: hostile pages of this size convert in at most about 0.1 s).
CHEAP_HTML_BYTES = 16_384
#: HTML with at most this many ``<`` (every element needs one) and bytes is moderate: the
#: hostile layouts of that many tags (block soup, tables, nesting, 512 KB of text) convert
#: in at most about 0.2 s and a few MB, about as the cheap ones do; the median page of
#: bench/extraction.py's sets has about 1,300 (five in six have at most 3,072). Until the
#: pool has started its workers, one such page at a time is converted in a thread of the
#: calling process (:meth:`ConvertPool.convert_nearby`), sparing a command-line read the
#: zygote's start (about 0.5 s of CPU); once workers run, they take every page.
MODERATE_HTML_TAGS = 3_072
MODERATE_HTML_BYTES = 524_288

#: Once the workers run, the event loop converts small bodies while such conversions have
#: taken at most this share of its time, in bursts of at most this many seconds.
NEARBY_SHARE = 0.25
NEARBY_BURST_S = 0.1

# The zygote: imports and warms up the converters, then forks a worker for each socket it is
# sent. The package's own directory goes first on its path, so it runs this very webward.
_ZYGOTE = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from webward._workers import _zygote_main; "
    "_zygote_main(*(int(arg) for arg in sys.argv[2:]))"
)
_WARM_UP = (
    b"<html><head><title>t</title></head><body><article><h1>Warm</h1>"
    + b"<p>Words to convert once, so the first real page does not pay for set-up.</p>" * 20
    + b"<table><tr><td>a</td></tr></table></article></body></html>"
)
# The expected wait is an average of recent conversion times, this much weight on the newest.
_EWMA = 0.3
_MAX_RETRY_AFTER_S = 60
_NICENESS = 10
# A worker retires (answers, then exits; the next conversion forks a fresh one, milliseconds)
# after this many conversions, or once its resident memory, after the heap is trimmed, has
# grown this far past what it had when forked: a big page leaves a heap behind that Python's
# allocator does not give back, and a worker would otherwise keep its largest page's size.
RETIRE_AFTER_JOBS = 500
RETIRE_GROWTH_MB = 32
# The heap is trimmed after a job only once the worker's resident memory has grown this far
# past what it had when forked. A trim after every job cost 0.3 to 0.5 ms of a 100 kB page's
# 16 to 17 ms (the pages it gives back fault in again on the next page) and gave back about
# 1 MB; after a 1 MB table it gives back 38 of 45 MB.
TRIM_GROWTH_MB = 16


def _media_type(body: bytes, content_type: str | None) -> str:
    declared = _content.media_type_of(content_type)
    return _content.sniff(body, declared, _content.charset_of(content_type))


def is_cheap(body: bytes, content_type: str | None) -> bool:
    """Whether converting ``body`` in the calling process is bounded by its size alone: an
    image (its size is read from its header), or up to :data:`CHEAP_HTML_BYTES` and not a
    PDF."""
    media_type = _media_type(body, content_type)
    if media_type == _content.PDF:
        return False
    return len(body) <= CHEAP_HTML_BYTES or not _content.is_text_type(media_type)


def is_moderate(body: bytes, content_type: str | None) -> bool:
    """Whether ``body`` converts in at most about 0.2 s: HTML within
    :data:`MODERATE_HTML_TAGS` and :data:`MODERATE_HTML_BYTES`, or text that is not HTML
    (Markdown, JSON, XML: linear); a PDF never is, whatever it is declared as."""
    media_type = _media_type(body, content_type)
    if media_type == _content.PDF or not _content.is_text_type(media_type):
        return False
    if media_type not in _content.HTML_TYPES:
        return True
    return len(body) <= MODERATE_HTML_BYTES and body.count(b"<") <= MODERATE_HTML_TAGS


@dataclass(frozen=True)
class Job:
    """The arguments of one :func:`webward._convert.convert` call."""

    body: bytes
    content_type: str | None
    final_url: str
    truncated: bool
    include_links: bool
    limits: LimitsSettings

    def run(self) -> Converted:
        # Through the module, so the converter stays one seam (tests replace it there).
        return _convert.convert(
            self.body,
            self.content_type,
            self.final_url,
            truncated=self.truncated,
            include_links=self.include_links,
            limits=self.limits,
        )


def _zygote_main(
    control_fd: int, memory_bytes: int, retire_after: int, retire_growth_bytes: int
) -> None:
    """The zygote's loop: for each socket received on ``control_fd``, fork a worker serving
    it and answer with the worker's pid. Ends when the pool closes its end."""
    import gc
    from multiprocessing.connection import Connection

    # Imported here once, shared by every worker it forks: the second reading's library.
    # Not pypdf: it brings cryptography, 16 MiB that HTML never touches and that would count
    # whole against the zygote; a worker's first PDF imports it (about 70 ms).
    import readability  # type: ignore[import-untyped]  # noqa: F401

    Job(_WARM_UP, "text/html", "https://warm.invalid/", False, True, LimitsSettings()).run()
    _convert.warm_up()  # what the warm-up page did not reach, paid here once, not per worker
    # What the workers share with the zygote stays shared: the collector never walks (and so
    # never writes to, copying the page) the objects that exist now, and the heap the warm-up
    # freed goes back to the system rather than into every worker's copy.
    gc.collect()
    gc.freeze()
    _trim_heap()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped as they exit
    control = socket.socket(fileno=control_fd)
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(control, 16, 1)
        except OSError:
            fds = []
        if not fds:
            os._exit(0)  # the pool closed: so does the zygote, without a slow tear-down
        pid = os.fork()
        if pid == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                _worker_main(Connection(fds[0]), memory_bytes, retire_after, retire_growth_bytes)
            finally:
                os._exit(0)
        os.close(fds[0])
        control.sendall(pid.to_bytes(8, "little"))


def _worker_main(
    conn: Connection, memory_bytes: int, retire_after: int, retire_growth_bytes: int
) -> None:
    """A worker's loop: one job at a time, each answered with ``(answer, cpu, retiring)``:
    the answer ``("ok", Converted)``, ``("error", kind, message, code, reason)`` or
    ``("memory",)``, the CPU seconds the job took, and whether the worker exits after it (see
    :data:`RETIRE_AFTER_JOBS`; always after ``memory``: a fresh worker has an unfragmented
    heap)."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    # Below the process serving the calls: a machine busy converting hostile pages still gives
    # the event loop (other agents' small reads, cached windows) the CPU first.
    os.nice(_NICENESS)
    forked_with = _resident_bytes()
    for done in range(1, retire_after + 1):
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return  # the pool closed or dropped this worker
        answer: tuple[Any, ...]
        cpu = time.process_time()
        try:
            answer = ("ok", job.run())
        except WebwardError as exc:
            answer = ("error", type(exc).__name__, exc.message, exc.code, exc.reason)
        except MemoryError:
            answer = ("memory",)  # the memory is freed once the exception unwinds
        cpu = time.process_time() - cpu
        del job  # the body, and the trees built from it, freed before the heap is trimmed
        grown = _resident_bytes() - forked_with
        if grown > TRIM_GROWTH_MB * 1024 * 1024:
            _trim_heap()
            grown = _resident_bytes() - forked_with
        retiring = answer[0] == "memory" or done == retire_after or grown > retire_growth_bytes
        conn.send((answer, cpu, retiring))
        if retiring:
            return


def _run_and_trim(job: Job) -> Converted:
    """``job`` run, then the heap trimmed: in a thread, the conversion's garbage is freed into
    that thread's malloc arena, which glibc does not shrink by itself."""
    try:
        return job.run()
    finally:
        _trim_heap()


def _resident_bytes() -> int:
    """This process's resident memory (0 where ``/proc`` does not say)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _trim_heap() -> None:
    """Give the heap's free memory back to the system (glibc's ``malloc_trim``; about 0.1 ms
    after a 100 kB page). Elsewhere nothing: the worker's retirement bounds its growth."""
    _malloc_trim()(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int]:
    import ctypes

    # The C library this interpreter runs on, through the process's own symbols.
    trim: Callable[[int], int] = getattr(ctypes.CDLL(None), "malloc_trim", lambda pad: 0)
    return trim


@dataclass
class _Worker:
    pid: int
    conn: Connection

    def kill(self) -> None:
        with contextlib.suppress(OSError):  # already gone
            os.kill(self.pid, signal.SIGKILL)
        self.conn.close()


class _Zygote:
    """The pool's zygote process and the socket it takes worker requests on."""

    def __init__(self, memory_bytes: int, retire_after: int, retire_growth_bytes: int) -> None:
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        ours, theirs = socket.socketpair()
        self._control = ours
        try:
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _ZYGOTE,
                    package_root,
                    str(theirs.fileno()),
                    str(memory_bytes),
                    str(retire_after),
                    str(retire_growth_bytes),
                ],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                # A native converter dying of a failed allocation prints to stderr: not onto the
                # terminal of a command-line read, which reports the failure in one sentence.
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        finally:
            theirs.close()
        # Stopped when closed, or when the pool is dropped unclosed, or at exit.
        self._stop = weakref.finalize(self, _stop_zygote, ours, self._process)

    def alive(self) -> bool:
        return self._process.poll() is None

    def fork(self) -> _Worker:
        """A new worker (blocks until the zygote has forked it)."""
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        try:
            socket.send_fds(self._control, [b"w"], [theirs.fileno()])
            pid = b""
            while len(pid) < 8:
                chunk = self._control.recv(8 - len(pid))
                if not chunk:
                    raise OSError("the conversion zygote has exited")
                pid += chunk
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        return _Worker(int.from_bytes(pid, "little"), Connection(ours.detach()))

    def close(self) -> None:
        self._stop()


def _stop_zygote(control: socket.socket, process: subprocess.Popen[bytes]) -> None:
    control.close()  # the zygote sees the end of its socket and exits
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _memory_allowed(wanted: int) -> int:
    """The address space a worker gets: ``wanted``, or this process's hard limit when lower
    (``ulimit -v``), which no child can raise its own past. A worker asking for more failed
    to start every time, and every page it would have read was "crashed"."""
    try:
        import resource
    except ImportError:  # no POSIX limits here: nor workers (they fork)
        return wanted
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


class ConvertPool:
    """The worker processes of one ``Web``: started when first needed, closed with it."""

    def __init__(
        self,
        *,
        workers: int,
        queue: int,
        memory_mb: int,
        clock: Callable[[], float] = time.monotonic,
        retire_after: int = RETIRE_AFTER_JOBS,
        retire_growth_mb: int = RETIRE_GROWTH_MB,
    ) -> None:
        if workers < 0 or queue < 0 or memory_mb < 64:
            raise InvalidInput(
                "limits.convert_workers and convert_queue must be >= 0 and convert_memory_mb >= 64"
            )
        self.size = workers or os.cpu_count() or 1
        self._queue = queue
        self._memory_bytes = _memory_allowed(memory_mb * 1024 * 1024)
        self._retire = (max(1, retire_after), retire_growth_mb * 1024 * 1024)
        self._clock = clock
        self._slots = anyio.Semaphore(self.size)
        self._waiting = 0
        self._running = 0
        self._idle: list[_Worker] = []
        # What a conversion takes, recent ones weighing most (a worker's start not included):
        # seconds from sending the job to its answer, and the CPU seconds the worker spent.
        self._average = 0.0
        self._cost = 0.0
        self._closed = False
        self._zygote: _Zygote | None = None
        self._zygote_lock = threading.Lock()  # workers are started from worker threads
        self._nearby = False  # a moderate page is being converted in this process
        # Seconds of conversion on the event loop not yet paid back (at NEARBY_SHARE of the
        # time since), as of the clock time beside it.
        self._loop_debt = (0.0, 0.0)

    @classmethod
    def from_limits(cls, limits: LimitsSettings) -> ConvertPool:
        return cls(
            workers=limits.convert_workers,
            queue=limits.convert_queue,
            memory_mb=limits.convert_memory_mb,
        )

    async def start(self) -> None:
        """Start the zygote and one worker now rather than on the first conversion that needs
        them (which otherwise pays for the zygote's start, about 0.5 s, inside its deadline)."""
        if not self._idle:
            self._idle.append(await anyio.to_thread.run_sync(self._start_sync))

    async def convert_nearby(self, job: Job) -> Converted | None:
        """``job`` converted in a thread of this process when its body is moderate (see
        :data:`MODERATE_HTML_TAGS`), no worker has been started yet and no other page is being
        converted so; ``None`` otherwise, for :meth:`convert`. One at a time: the event loop
        then shares the CPU with at most one conversion, however many reads arrive at once.

        Not once the workers run (a server starts them before serving, a library's first large
        page starts them): the hop to a running worker costs a pickled page, while a
        conversion here holds the interpreter the event loop needs and, beside a busy loop,
        takes 1.5 to 2 times its CPU in a worker (measured: docs/servers.md, uncached reads)."""
        if self._nearby or self._zygote is not None or not is_moderate(job.body, job.content_type):
            return None
        self._nearby = True
        try:
            return await anyio.to_thread.run_sync(_run_and_trim, job)
        finally:
            self._nearby = False

    def keeps(self, body: bytes, content_type: str | None) -> bool:
        """Whether ``body`` is converted in the calling process (the caller reports the time
        it took: :meth:`kept`) rather than passed to :meth:`convert_nearby` and
        :meth:`convert`: an image, or a body up to :data:`CHEAP_HTML_BYTES` that is not a PDF,
        the latter once the workers run only while the event loop has time to spare for it
        (see the module's docstring)."""
        if not is_cheap(body, content_type):
            return False
        if len(body) > CHEAP_HTML_BYTES:
            return True  # an image
        return self._zygote is None or self._owed() < NEARBY_BURST_S

    def kept(self, seconds: float) -> None:
        """A conversion :meth:`keeps` let this process make took ``seconds``."""
        self._loop_debt = (self._owed() + seconds, self._clock())

    def _owed(self) -> float:
        debt, since = self._loop_debt
        return max(0.0, debt - (self._clock() - since) * NEARBY_SHARE)

    @property
    def waiting(self) -> int:
        """Conversions waiting for a worker now."""
        return self._waiting

    async def convert(self, job: Job, deadline: float) -> Converted:
        """``job`` converted in a worker, by ``deadline`` (a ``clock`` time); raises
        ``Refused`` (overloaded, too_large, unsupported_type) or ``UpstreamError`` (timeout)."""
        self._shed(deadline)
        acquired = False
        self._waiting += 1
        try:
            with anyio.move_on_after(deadline - self._clock()):
                await self._slots.acquire()
                acquired = True
        finally:
            self._waiting -= 1
        # No worker came free in time; or one did, but with less time left than a conversion
        # takes (the average, learned while this call waited): a conversion started now would
        # only be killed at the deadline, spending a worker that calls with time left could use.
        if not acquired or deadline - self._clock() < self._average:
            if acquired:
                self._slots.release()
            raise _timed_out(job.final_url, job.limits)
        self._running += 1
        try:
            answer = await self._exchange(job, deadline)
        finally:
            self._running -= 1
            self._slots.release()
        # The next waiting conversion was woken by the release: let it hand the worker its
        # job before this call goes on to its window, envelope and audit, so that the worker
        # converts meanwhile instead of waiting for them.
        await anyio.lowlevel.cancel_shielded_checkpoint()
        return self._result(answer, job)

    def _shed(self, deadline: float) -> None:
        """Refuse at once what would not finish in time (deadline-aware admission): when the
        expected wait for a worker and then the conversion itself would pass the deadline, or,
        whatever the estimate, past the queue bound (a backstop for a pool that has not yet
        learned how long conversions take)."""
        if self._running < self.size:
            return  # a worker is free
        # Every worker busy: one comes free every ``cost / size`` seconds, and the conversions
        # waiting already go first. The cost is the workers' CPU time, not the time their
        # answers took: that stretches while the reads of a burst, arriving together, have the
        # CPU (the workers run below them), and would refuse reads that the workers, given the
        # CPU back a moment later, finish well in time.
        expected = (self._waiting + 1) * self._cost / self.size
        if self._waiting >= self._queue or expected + self._cost > deadline - self._clock():
            retry = min(_MAX_RETRY_AFTER_S, max(1, math.ceil(expected)))
            raise Refused(
                f"refused: webward is converting as many pages as it can; try again in {retry} s",
                code="overloaded",
                reason=Reason.OVERLOADED,
                retry_after=float(retry),
            )

    async def _exchange(self, job: Job, deadline: float) -> tuple[Any, ...]:
        worker = self._idle.pop() if self._idle else None
        if worker is not None:
            try:
                worker.conn.send(job)
            except OSError:  # it died while idle (killed from outside): a fresh one instead
                worker.kill()
                worker = None
        if worker is None:
            # The first start also starts the zygote, which imports the converters: off the
            # event loop, and within the deadline (a start given up on leaves a worker whose
            # socket is dropped with it, so it exits).
            with anyio.move_on_after(deadline - self._clock()):
                worker = await anyio.to_thread.run_sync(self._start_sync, abandon_on_cancel=True)
            if worker is None:
                return ("timeout",)
            try:
                worker.conn.send(job)
            except OSError:
                worker.kill()
                return ("crashed",)
        started = self._clock()
        try:
            with anyio.move_on_after(deadline - started) as scope:
                await anyio.wait_readable(worker.conn.fileno())
            # uvloop leaves a watched descriptor non-blocking (libuv's poll handle sets it so);
            # the connection's whole-message recv and send need it blocking again, or a large
            # answer or the next job fails part-way as if the worker had crashed.
            os.set_blocking(worker.conn.fileno(), True)
            spent = self._clock() - started
            self._average = _ewma(self._average, spent)
            if scope.cancelled_caught:
                worker.kill()  # still converting: stopped with its worker
                self._cost = _ewma(self._cost, spent)
                return ("timeout",)
            answer: tuple[Any, ...]
            answer, cpu, retiring = worker.conn.recv()
            self._cost = _ewma(self._cost, cpu)
        except (EOFError, OSError):  # the worker died: a crash in a converter, or killed
            worker.kill()
            return ("crashed",)
        except BaseException:  # the caller gave up (cancelled): nobody wants this conversion
            worker.kill()
            raise
        if retiring:
            worker.conn.close()  # it exits by itself; a fresh one is forked when next needed
        elif self._closed:
            worker.kill()
        else:
            self._idle.append(worker)
        return answer

    def _start_sync(self) -> _Worker:
        with self._zygote_lock:
            if self._zygote is None or not self._zygote.alive():
                self._zygote = _Zygote(self._memory_bytes, *self._retire)
            try:
                return self._zygote.fork()
            except OSError:  # the zygote died (killed, or out of memory): once more, fresh
                self._zygote.close()
                self._zygote = _Zygote(self._memory_bytes, *self._retire)
                return self._zygote.fork()

    def _result(self, answer: tuple[Any, ...], job: Job) -> Converted:
        kind = answer[0]
        if kind == "ok":
            result: Converted = answer[1]
            return result
        if kind == "error":
            _, name, message, code, reason = answer
            cls = {"Refused": Refused, "InvalidInput": InvalidInput}.get(name, UpstreamError)
            raise cls(message, code=code, reason=reason)
        if kind == "timeout":
            raise _timed_out(job.final_url, job.limits)
        if kind == "memory":
            raise Refused(
                f"refused: converting {job.final_url} needed more than the "
                f"{self._memory_bytes >> 20} MiB memory limit and was stopped",
                code="too_large",
                reason=Reason.CONVERT_MEMORY,
            )
        raise Refused(
            f"refused: the converter stopped on {job.final_url} (it crashed, or ran out of its "
            f"{self._memory_bytes >> 20} MiB of memory); webward cannot read this page",
            code="unsupported_type",
            reason=Reason.CONVERT_CRASHED,
        )

    async def aclose(self) -> None:
        """Stop the idle workers; a busy one is stopped when its conversion ends."""
        self._closed = True
        idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()
        if self._zygote is not None:
            zygote, self._zygote = self._zygote, None
            await anyio.to_thread.run_sync(zygote.close)


def _ewma(average: float, sample: float) -> float:
    """``sample`` folded into a running ``average`` (0: none yet), recent ones weighing most."""
    return sample if not average else (1 - _EWMA) * average + _EWMA * sample


def _timed_out(url: str, limits: LimitsSettings) -> UpstreamError:
    return UpstreamError(
        operator_step(
            f"converting {url} did not finish within the read's {limits.fetch_timeout_s:g} s "
            "deadline and was stopped; try again when webward is less busy",
            "an operator can raise [limits] fetch_timeout_s",
            model="",
        ),
        code="timeout",
        reason=Reason.CONVERT_TIMEOUT,
    )
