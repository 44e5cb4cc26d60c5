"""Is a folder the user's own? Checks for every place gpumem, or a library on its behalf,
loads code or pickles from (the simulator's kernel cache, Numba's cache of it, CuPy's
kernel cache): a folder that another user can write is a way to run code as this user
(docs/reliability.md, "No foreign code runs")."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def uid() -> int:
    """This process's user id (-1 where there are no POSIX owners)."""
    return os.getuid() if hasattr(os, "getuid") else -1


def private(p: Path) -> bool:
    """Can only this user (or root) change ``p``: not a symlink, owned by us, and not
    writable by group or others?"""
    try:
        st = os.lstat(p)
    except OSError:
        return False
    if stat.S_ISLNK(st.st_mode):
        return False
    if not hasattr(os, "getuid"):  # no POSIX owners and modes to check (Windows)
        return True
    return st.st_uid == uid() and not st.st_mode & 0o022


def trusted_parents(d: Path) -> bool:
    """Is every folder above ``d`` owned by us or root and writable by no one else (or
    sticky, as /tmp is, so no one else can rename ``d`` away)? Otherwise ``d`` itself could
    be swapped for another folder between our check and our use."""
    if not hasattr(os, "getuid"):
        return True
    for parent in Path(os.path.abspath(d)).parents:
        try:
            st = os.stat(parent)
        except OSError:
            return False
        if st.st_uid not in (uid(), 0):
            return False
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return False
    return True


def may_create(d: Path) -> bool:
    """May ``d`` be created: are its nearest existing ancestor and every folder above it
    trusted? Checked before creating anything, so nothing is left in a shared folder."""
    a = Path(os.path.abspath(d))
    while not os.path.lexists(a) and a != a.parent:
        a = a.parent
    return trusted_parents(a / "_")


def usable(d: Path) -> str:
    """Why ``d`` cannot hold code loaded on the user's behalf ("" if it can): an existing
    folder must be private with trusted parents; a missing one must be creatable safely."""
    if os.path.lexists(d):
        if not private(d):
            return f"{d} is not private to this user (a symlink, another owner, or "\
                   f"writable by others)"
        if not trusted_parents(d):
            return f"a folder above {d} is writable by others"
        return ""
    return "" if may_create(d) else f"a folder above {d} is writable by others"


def user_cache_root() -> Path | None:
    """The user's cache folder: ``$XDG_CACHE_HOME`` if absolute (the XDG spec ignores a
    relative one), else ``~/.cache``; ``None`` without a home folder."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg)
    try:
        return Path.home() / ".cache"
    except RuntimeError:  # no home folder
        return None
