# SPDX-License-Identifier: Apache-2.0
"""FileStreamProgramCache shared by processes that write, read and evict at once.

Eviction must never delete an entry that a writer replaced after the evictor
examined it.  Two tests:

* a deterministic one: a writer that takes no lock (as ``cuda.core``'s
  does) replaces the victim between every pair of file-system steps of an
  eviction; the newer entry must survive each time;
* a stress one, repeated for a few rounds: writer processes rewrite and
  re-read their own entries while evictor processes write under a small
  bound (every write evicts) on a simulated slow file system (each unlink
  or rename waits 1 ms, so an evictor acts well after it looked).  An entry
  written in a writer's last few steps is younger (by access time) than
  everything an eviction may legitimately remove, so the writer must always
  read it back as written.  With the check-then-unlink eviction this
  replaced, the writers lost dozens of such entries a round.

``CACHE_STRESS_*`` environment variables change the stress parameters.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import types

import pytest
from _scripts.hardening_util import package_root

from cuda_core.utils import FileStreamProgramCache
from cuda_core.utils._program_cache import _file_stream

# -- deterministic: a replacement between any two steps of the removal -------------------

#: The os functions through which an eviction can look at or change an entry.
_WATCHED = ("stat", "lstat", "open", "rename", "replace", "unlink", "remove", "link", "utime")


class _Interleaver:
    """Stands in for ``os`` in the cache module; replaces ``victim`` after the k-th step on it.

    ``k == 0`` replaces it before the first step.  The replacement is a raw
    write and rename (a writer that takes no lock), made once.
    """

    def __init__(self, victim: str, k: int, newer: bytes, tmp_dir: str) -> None:
        self.victim, self.k, self.newer, self.tmp_dir = victim, k, newer, tmp_dir
        self.steps = 0
        self.fired = False

    def _replace_victim(self) -> None:
        self.fired = True
        staged = os.path.join(self.tmp_dir, "foreign-writer")
        with open(staged, "wb") as f:
            f.write(self.newer)
        os.replace(staged, self.victim)

    def __getattr__(self, name):
        real = getattr(os, name)
        if name not in _WATCHED:
            return real

        def watched(*args, **kwargs):
            touches = any(
                isinstance(a, (str, os.PathLike)) and os.fspath(a) == self.victim for a in args
            )
            if touches and not self.fired and self.steps == self.k == 0:
                self._replace_victim()
            try:
                return real(*args, **kwargs)
            finally:
                if touches:
                    self.steps += 1
                    if not self.fired and self.steps == self.k:
                        self._replace_victim()

        return watched


def _cache_with_old_victim(root):
    """A cache over its bound by one entry, whose least recently read entry is ``old``."""
    c = FileStreamProgramCache(root, max_size_bytes=2500)
    c[b"old"] = b"A" * 1000
    c[b"young"] = b"Y" * 1000
    victim = c._entry_path(b"old")
    st = os.stat(victim)
    os.utime(victim, ns=(st.st_mtime_ns - 10**10, st.st_mtime_ns))  # read long ago
    return c, victim


def test_entry_replaced_between_look_and_delete_is_kept(tmp_path, monkeypatch):
    newer = b"B" * 1200  # another size, so the old and new files differ in every way
    outcomes = []
    for k in range(64):
        root = tmp_path / f"k{k}"
        c, victim = _cache_with_old_victim(root)
        spy = _Interleaver(victim, k, newer, str(tmp_path))
        monkeypatch.setattr(_file_stream, "os", spy)
        try:
            c[b"trigger"] = b"T" * 1000  # over the bound: "old" is the first victim
        finally:
            monkeypatch.setattr(_file_stream, "os", os)
        if not spy.fired:  # k is past the last step on the victim: it went, as it should
            assert spy.steps >= 1
            assert not os.path.exists(victim)
            break
        outcomes.append(k)
        assert os.path.exists(victim), f"the newer entry was deleted (replaced after step {k})"
        with open(victim, "rb") as f:
            assert f.read() == newer, k
        assert c[b"old"] == newer
        assert not [n for n in os.listdir(root / "tmp") if n != "foreign-writer"], k
    else:
        pytest.fail("the eviction kept stepping on the victim")
    assert outcomes  # the replacement landed at least once


def test_unchanged_victim_is_deleted_and_leaves_no_temporary_file(tmp_path):
    c, victim = _cache_with_old_victim(tmp_path)
    c[b"trigger"] = b"T" * 1000
    assert not os.path.exists(victim)
    assert c.get(b"old") is None
    assert c[b"young"] == b"Y" * 1000 and c[b"trigger"] == b"T" * 1000
    assert os.listdir(tmp_path / "tmp") == []


def test_clear_keeps_an_entry_replaced_before_its_removal(tmp_path, monkeypatch):
    c, victim = _cache_with_old_victim(tmp_path)
    newer = b"N" * 700
    for k in (1, 2, 3):
        spy = _Interleaver(victim, k, newer, str(tmp_path))
        monkeypatch.setattr(_file_stream, "os", spy)
        try:
            c.clear()
        finally:
            monkeypatch.setattr(_file_stream, "os", os)
        if spy.fired:
            assert c[b"old"] == newer, k
        c[b"old"] = b"A" * 1000


def test_writer_holds_the_lock_shared(tmp_path, monkeypatch):
    """A write commits its entry under the directory's lock (shared), so it waits for evictions."""
    if sys.platform == "win32":
        pytest.skip("no flock")
    import fcntl

    seen = []
    real_flock = fcntl.flock

    def flock(fd, op):
        seen.append(op)
        return real_flock(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock)
    c = FileStreamProgramCache(tmp_path, max_size_bytes=1500)
    c[b"a"] = bytes(1000)
    assert seen == [fcntl.LOCK_SH]
    c[b"b"] = bytes(1000)  # evicts "a"
    assert seen[1:] == [fcntl.LOCK_SH, fcntl.LOCK_EX]
    assert (tmp_path / ".lock").exists()
    assert len(c) == 1


# -- stress: processes writing, reading and evicting together ---------------------------

_WORKER = textwrap.dedent(
    """
    import collections, hashlib, os, sys, time
    sys.path.insert(0, {repo!r})
    from cuda_core.utils import FileStreamProgramCache

    role, wid, nprocs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

    def keys(prefix):
        # Keys in few shard directories: an eviction's scan stays short.
        n = 0
        while True:
            key = b"%s-%d" % (prefix, n)
            n += 1
            if hashlib.sha256(key).digest()[0] < {shards}:
                yield key

    # An entry becomes a legitimate victim once read: its access time is put
    # far back, writers' entries furthest (every eviction tries them first).
    base = time.time_ns() - 10**12

    def age(cache, key, offset):
        path = cache._entry_path(key)
        try:
            st = os.stat(path)
            os.utime(path, ns=(base + offset, st.st_mtime_ns))
        except FileNotFoundError:
            pass  # evicted already: it was old

    if role == "e":
        # A slow file system (a network mount, a loaded host): every call that
        # removes or renames takes a while, so an evictor acts well after it
        # looked.  The cache module reaches the file system through its "os".
        from cuda_core.utils._program_cache import _file_stream

        class SlowOS:
            def __getattr__(self, name):
                return getattr(os, name)

            def _slow(name):
                def call(self, *args, **kwargs):
                    time.sleep({delay})
                    return getattr(os, name)(*args, **kwargs)

                return call

            unlink, remove, rename, replace = map(_slow, ("unlink", "remove", "rename", "replace"))

        _file_stream.os = SlowOS()

    own = [k for k, _ in zip(keys(b"own-%d" % wid), range({own}))]
    fillers = keys(b"fill-%d" % wid)
    report = []
    for rnd in range({rounds}):
        # Writers keep no bound (they never evict); evictors write under a small one.
        cache = FileStreamProgramCache(
            os.path.join({path!r}, str(rnd)), max_size_bytes=None if role == "w" else {max_size}
        )
        # Start together, once every process has imported cuda_core.
        ready = os.path.join({path!r}, "ready-%d" % rnd)
        os.makedirs(ready, exist_ok=True)
        open(os.path.join(ready, "%s%d" % (role, wid)), "w").close()
        while len(os.listdir(ready)) < nprocs:
            time.sleep(0.002)
        lost, pending, i = [], collections.deque(), 0
        stop = time.monotonic() + {seconds}
        while time.monotonic() < stop:
            if role == "w":
                key = own[i % len(own)]
                value = b"%d:%d:" % (wid, i) + bytes(64 + (i * 7) % 200)
                cache[key] = value
                pending.append((key, value, i))
                # Every entry written in the last few steps is still younger than
                # anything an eviction may remove: each must read back as written.
                for k, v, j in pending:
                    got = cache.get(k)
                    if got != v:
                        lost.append(j)
                if len(pending) > {lag}:
                    age(cache, pending.popleft()[0], 0)
            else:
                filler = next(fillers)
                cache[filler] = bytes({fill})  # over the bound: evicts
                age(cache, filler, 10**9)
            i += 1
        report.append((len(set(lost)), i))
    print("RESULT", report)
    """
)

WRITERS = int(os.environ.get("CACHE_STRESS_WRITERS", "3"))
EVICTORS = int(os.environ.get("CACHE_STRESS_EVICTORS", "3"))
SECONDS = float(os.environ.get("CACHE_STRESS_SECONDS", "2"))
MAX = int(os.environ.get("CACHE_STRESS_MAX", str(24 * 1024)))
FILL = int(os.environ.get("CACHE_STRESS_FILL", "1024"))
OWN = int(os.environ.get("CACHE_STRESS_OWN", "8"))
SHARDS = int(os.environ.get("CACHE_STRESS_SHARDS", "4"))
DELAY = float(os.environ.get("CACHE_STRESS_DELAY", "0.001"))
LAG = 2
ROUNDS = 3


@pytest.fixture
def fast_dir(tmp_path):
    """A directory in memory where there is one (fsync costs nothing: more races a second)."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        path = tempfile.mkdtemp(prefix="cache-stress-", dir=shm)
        yield path
        shutil.rmtree(path, ignore_errors=True)
    else:
        yield str(tmp_path)


def test_processes_never_lose_an_entry_just_written(tmp_path, fast_dir):
    script = tmp_path / "worker.py"
    # The bound leaves room for every young entry (a writer has at most LAG + 1
    # of about 300 bytes, an evictor one filler, each process a temporary
    # file), so an eviction never needs to remove one that was just written.
    script.write_text(
        _WORKER.format(
            repo=package_root(),
            path=fast_dir,
            max_size=MAX,
            own=OWN,
            fill=FILL,
            lag=LAG,
            shards=SHARDS,
            delay=DELAY,
            rounds=ROUNDS,
            seconds=SECONDS,
        )
    )
    roles = [("w", w) for w in range(WRITERS)] + [("e", e) for e in range(EVICTORS)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), role, str(w), str(len(roles))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for role, w in roles
    ]
    reports = {}
    try:
        for (role, w), p in zip(roles, procs):
            out, err = p.communicate(timeout=60 + ROUNDS * SECONDS * 4)
            assert p.returncode == 0, err.decode()
            line = [x for x in out.decode().splitlines() if x.startswith("RESULT ")][-1]
            reports[f"{role}{w}"] = ast.literal_eval(line[len("RESULT ") :])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    print("steps and losses per round:", reports)
    assert all(steps > 0 for report in reports.values() for _, steps in report), reports
    lost = {name: report for name, report in reports.items() if any(n for n, _ in report)}
    assert not lost, f"entries deleted right after their writer wrote them (lost, steps): {lost}"
    for rnd in range(ROUNDS):
        assert os.listdir(os.path.join(fast_dir, str(rnd), "tmp")) == []


def test_module_uses_os_through_its_global():
    """The interleaving test substitutes the module's ``os``; make sure there is one."""
    assert isinstance(_file_stream.os, types.ModuleType)
