"""The EpisodeStore's folder on disk: the writer lock, crash-safe creation, chunk files.

Creation. A store is built in a hidden sibling folder (`.NAME.creating-PID-TOKEN`) and renamed
into place in one `rename`, so `NAME` is either absent or a complete store: a writer killed inside
`create` leaves only the sibling, which the next `create` of that path removes once its creator
is gone. Replacing a store (`overwrite=True`) first takes the old store's writer lock, so a store
another process writes to is never replaced; the old folder is renamed aside and deleted after
the new one is in place. Folders left by older code (root metadata without the commit record,
no chunk written) are recognised as half-created and replaced by `create` with a warning.

Locking. The lock is `flock` on `writer.lock` inside the store. Because `create(overwrite=True)`
swaps folders, a lock taken on a file that is no longer the store's (its inode changed between
open and flock) is refused, so two writers can never hold the same path.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

FORMAT_NAME = "vla-episode-store"
LOCK_FILE = "writer.lock"
_BUILDING, _REPLACED = "creating", "replaced"


class StoreError(RuntimeError):
    """The store on disk is missing, damaged, of another format, or locked by another writer."""


class StoreRepairWarning(UserWarning):
    """A half-created store (its creator was killed) was replaced."""


def lock_writer(folder: Path) -> int:
    """Take the single-writer lock of the store in `folder`; returns the locked fd."""
    lock = folder / LOCK_FILE
    try:
        fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
    except OSError as e:
        raise StoreError(f"{folder}: cannot open the writer lock ({e.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StoreError(f"{folder}: another process is writing to this store (writer.lock held)") from None
    try:
        same = os.fstat(fd).st_ino == os.stat(lock).st_ino
    except FileNotFoundError:
        same = False
    if not same:  # the folder was swapped by create(overwrite=True) between our open and flock
        unlock(fd)
        raise StoreError(f"{folder}: the store was replaced while it was being opened; open it again")
    return fd


def unlock(fd: int | None) -> None:
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _has_chunk_files(folder: Path) -> bool:
    """Anything but metadata (`zarr.json`) and the lock: a chunk, so possibly data."""
    return any(f not in ("zarr.json", LOCK_FILE) for _, _, files in os.walk(folder) for f in files)


def folder_state(path: Path) -> str:
    """missing | empty | store | half_created | damaged | foreign (what `create` finds at `path`)."""
    if not path.exists():
        return "missing"
    if not path.is_dir():
        return "foreign"
    entries = set(os.listdir(path)) - {LOCK_FILE}
    if not entries:
        return "empty"
    if "zarr.json" in entries:
        try:
            meta = json.loads((path / "zarr.json").read_text())
        except (OSError, ValueError):
            return "damaged"
        attrs = (meta.get("attributes") or {}) if isinstance(meta, dict) else None
        if isinstance(attrs, dict) and attrs.get("format") == FORMAT_NAME:
            return "store"
        if attrs == {} and entries <= {"zarr.json", "data", "meta"} and not _has_chunk_files(path):
            return "half_created"
        return "foreign"
    if entries <= {"data", "meta"} and not _has_chunk_files(path):
        return "half_created"
    return "foreign"


HALF_CREATED = ("a half-created episode store (a process was killed inside EpisodeStore.create; it holds no "
                "episodes): create it again (create replaces it) or delete the folder")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_siblings(path: Path) -> None:
    """Delete build / replaced folders of `path` whose creating process is gone."""
    for kind in (_BUILDING, _REPLACED):
        for sibling in path.parent.glob(f".{path.name}.{kind}-*"):
            try:
                pid = int(sibling.name.rsplit("-", 2)[-2])
            except ValueError:
                continue
            if pid != os.getpid() and _pid_alive(pid):
                continue
            try:  # alive-but-reused pid aside, a free lock means nobody builds there any more
                fd = lock_writer(sibling)
            except StoreError:
                continue
            shutil.rmtree(sibling, ignore_errors=True)
            unlock(fd)


def place_new_store(path: Path, build: Callable[[Path], None], overwrite: bool) -> int:
    """Build a store with `build(folder)` beside `path` and rename it into place.

    Returns the fd of the new store's writer lock (held from before the first file is written).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_siblings(path)
    state = folder_state(path)
    if state == "store" and not overwrite:
        raise StoreError(f"{path}: a store already exists (pass overwrite=True to replace it)")
    if state in ("damaged", "foreign") and not overwrite:
        what = "its zarr.json is unreadable" if state == "damaged" else "not an episode store"
        raise StoreError(f"{path}: exists and {what}; refusing to replace it (pass overwrite=True to do so)")
    old_fd = lock_writer(path) if state in ("store", "half_created", "damaged") else None
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    tmp = path.with_name(f".{path.name}.{_BUILDING}-{token}")
    new_fd: int | None = None
    try:
        tmp.mkdir()
        new_fd = lock_writer(tmp)
        build(tmp)
        if state in ("missing", "empty"):
            # rename onto nothing or an empty folder; it fails (never replaces) if a store appeared.
            _rename(tmp, path)
        else:
            trash = path.with_name(f".{path.name}.{_REPLACED}-{token}")
            os.rename(path, trash)
            _rename(tmp, path)
            shutil.rmtree(trash, ignore_errors=True)
        if state == "half_created":
            warnings.warn(f"{path}: replaced a half-created episode store (its creator was killed inside "
                          "create; it held no episodes)", StoreRepairWarning, stacklevel=3)
    except BaseException:
        unlock(new_fd)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        unlock(old_fd)
    return new_fd


def _rename(src: Path, dst: Path) -> None:
    try:
        os.rename(src, dst)
    except OSError as e:
        raise StoreError(f"{dst}: another process created something here meanwhile ({e.strerror})") from None


def read_chunk_bytes(file: Path) -> bytes | None:
    with contextlib.suppress(FileNotFoundError):
        return file.read_bytes()
    return None


def read_chunk_trailer(file: Path) -> int | None:
    """The crc32c a chunk file ends in (-1 if it is too short to hold one, None if it is missing):
    4 bytes, so checking a chunk's position on every read costs no full read of the file."""
    try:
        with open(file, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            if size < 4:
                return -1
            f.seek(size - 4)
            return int.from_bytes(f.read(4), "little")
    except FileNotFoundError:
        return None


def crc_ok(data: bytes) -> bool:
    """The crc32c codec's check: the last 4 bytes are the little-endian crc32c of the rest."""
    import google_crc32c

    return len(data) >= 4 and google_crc32c.value(data[:-4]) == int.from_bytes(data[-4:], "little")
