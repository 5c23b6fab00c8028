"""A worker's own view of the file system: a private mount namespace, entered as root before the
worker gives up root (grader/confine.py).

In it, and nowhere else:

* the secrets (the reference, the suites, ``.git``, results, other submissions) are covered, a folder
  by an empty tmpfs that nobody may enter and a file by ``/dev/null``: not even a file that others
  may read is readable there;
* folders closed to others that stand between the worker and its Python installation (a pyenv
  under ``/root``, mode 0700) are replaced by an open tmpfs that holds only the way through, so the
  worker can import the standard library and site-packages, and sees nothing else of ``/root``;
* ``/proc`` shows the worker's own processes only (``hidepid``), not the grader's command lines.

Nothing propagates back: the namespace's mounts are private, and they vanish with its last process.
"""
from __future__ import annotations

import ctypes
import os
from typing import Iterable

_CLONE_NEWNS = 0x00020000
_MS_BIND, _MS_REC, _MS_PRIVATE = 0x1000, 0x4000, 0x40000
_ROUNDS = 8  # folders closed to others, one inside another, that we open on the way to the runtime


class MountError(OSError):
    """The namespace or one of its mounts could not be made."""


def _load_libc():
    # Loaded at import: after the drop the worker may not be able to load anything new.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.unshare, libc.mount
    except (OSError, AttributeError):
        return None, None


_unshare, _mount_function = _load_libc()


def _mount(source: str | None, target: str, kind: str | None, flags: int = 0, options: str | None = None) -> None:
    encode = (lambda text: text.encode() if text is not None else None)
    if _mount_function(encode(source), encode(target), encode(kind), flags, encode(options)) != 0:
        code = ctypes.get_errno()
        raise MountError(code, f"mount {kind or source} on {target}: {os.strerror(code)}")


def enter_private_view(*, hide: Iterable[str], reach: Iterable[str], can_enter, keep: Iterable[str] = ()) -> None:
    """Move this (root, single-threaded, freshly forked) process into a mount namespace of its own,
    where the folders of ``reach`` can be entered by the user that ``can_enter(path)`` judges for, and
    ``hide`` is covered, except what holds ``reach`` or ``keep`` (the working copy). Raise
    :class:`MountError` if any step fails."""
    if _unshare is None:
        raise MountError(0, "unshare(2) is not available on this system")
    if _unshare(_CLONE_NEWNS) != 0:
        code = ctypes.get_errno()
        raise MountError(code, f"unshare(CLONE_NEWNS): {os.strerror(code)}")
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing done here reaches the machine's mounts
    reach = [os.path.realpath(path) for path in reach]
    for _ in range(_ROUNDS):
        closed = {}
        for path in reach:
            folder = _first_closed(path, can_enter)
            if folder is not None:
                closed.setdefault(folder, set()).add(os.path.relpath(path, folder).split(os.sep)[0])
        if not closed:
            break
        for folder, ways in sorted(closed.items()):
            _open_way_through(folder, ways)
    needed = [*reach, *(os.path.realpath(path) for path in keep)]
    for path in hide:
        path = os.path.realpath(path)
        if any(inner == path or inner.startswith(path + os.sep) for inner in needed):
            continue  # covering it would cover what the worker needs
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", 0, "mode=000,size=4k")
        elif os.path.exists(path):
            _mount("/dev/null", path, None, _MS_BIND)
    _mount("proc", "/proc", "proc", 0, "hidepid=2")


def _first_closed(path: str, can_enter) -> str | None:
    """The outermost folder above ``path`` (or ``path`` itself) that the user cannot enter, or None."""
    parts = path.split(os.sep)[1:]
    for depth in range(1, len(parts) + 1):
        folder = os.sep + os.sep.join(parts[:depth])
        if not can_enter(folder):
            return folder if folder != path else None  # the runtime folder itself: nothing to open
    return None


def _open_way_through(folder: str, ways: set[str]) -> None:
    """Cover ``folder`` with an open tmpfs that holds only its entries ``ways``, bound to the originals."""
    if folder == os.sep:
        raise MountError(0, "the root folder is closed to the worker's user")
    held = {name: os.open(os.path.join(folder, name), os.O_PATH | os.O_CLOEXEC) for name in ways}
    try:
        _mount("tmpfs", folder, "tmpfs", 0, "mode=755,size=64k")
        for name, fd in held.items():
            target = os.path.join(folder, name)
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.mkdir(target)
            else:
                open(target, "w").close()
            _mount(f"/proc/self/fd/{fd}", target, None, _MS_BIND | _MS_REC)
    finally:
        for fd in held.values():
            os.close(fd)
