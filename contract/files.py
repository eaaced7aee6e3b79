"""The one path check of every command: a path it cannot use is refused in one line, before any work.

An input that is a folder, missing, a symlink loop or unreadable, and an output that is a folder or cannot be
written, are each refused that way.
"""

from __future__ import annotations

import os
from pathlib import Path


class PathCheckError(ValueError):
    """A path a command cannot use: the message names the option, the path and the fix."""


def _resolved(path: Path, what: str) -> Path:
    try:
        return path.resolve(strict=False)
    except RuntimeError:
        # Python < 3.13 raises RuntimeError on a symlink loop; 3.13 raises OSError (ELOOP) below.
        raise PathCheckError(f"{what} {path}: a symbolic link loop; point it at a real file") from None
    except OSError as e:
        raise PathCheckError(
            f"{what} {path}: cannot be resolved ({e.strerror or type(e).__name__})"
        ) from None


def input_file(path: str | Path, what: str) -> Path:
    """path as an existing, readable regular file; PathCheckError naming `what` (e.g. "--suite") otherwise."""
    p = Path(path)
    _resolved(p, what)
    if p.is_symlink() and not p.exists():
        try:
            os.stat(p)
        except OSError as e:
            if e.errno == 40:  # ELOOP
                raise PathCheckError(f"{what} {p}: a symbolic link loop; point it at a real file") from None
        raise PathCheckError(
            f"{what} {p}: a dangling symbolic link (to {os.readlink(p)}); fix the link"
        ) from None
    if not p.exists():
        raise PathCheckError(f"{what} {p}: not found; check the path")
    if p.is_dir():
        raise PathCheckError(f"{what} {p}: is a folder; give a file")
    if not p.is_file():
        raise PathCheckError(f"{what} {p}: not a regular file; give a file")
    if not os.access(p, os.R_OK):
        raise PathCheckError(f"{what} {p}: not readable; check its permissions")
    return p


def input_dir(path: str | Path, what: str) -> Path:
    """path as an existing, readable folder; PathCheckError naming `what` otherwise."""
    p = Path(path)
    _resolved(p, what)
    if p.is_symlink() and not p.exists():
        raise PathCheckError(f"{what} {p}: a dangling or looping symbolic link; fix the link")
    if not p.exists():
        raise PathCheckError(f"{what} {p}: not found; check the path")
    if not p.is_dir():
        raise PathCheckError(f"{what} {p}: is a file; give a folder")
    if not os.access(p, os.R_OK | os.X_OK):
        raise PathCheckError(f"{what} {p}: not readable; check its permissions")
    return p


# Kernel pseudo-file systems: a write there is never a report (and may change the running system).
_SYSTEM_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))


def _writable_parent(p: Path, what: str, inside: bool = False) -> None:
    # inside: p is a folder to write into, so its own place (not its parent's) must be writable.
    resolved = _resolved(p / "x" if inside else p, what)
    if any(resolved == r or r in resolved.parents for r in _SYSTEM_ROOTS):
        root = next(r for r in _SYSTEM_ROOTS if resolved == r or r in resolved.parents)
        raise PathCheckError(f"{what} {p}: under {root}, not a place for output; choose another path")
    parent = resolved.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise PathCheckError(
            f"{what} {p}: {parent} is a file, so nothing can be written under it; choose another"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PathCheckError(f"{what} {p}: {parent} is not writable; choose another path")


def output_file(path: str | Path, what: str) -> Path:
    """path as a file that can be written (made with its folders); PathCheckError naming `what` otherwise."""
    p = Path(path)
    if p.is_dir():
        raise PathCheckError(f"{what} {p}: is a folder; give a file name")
    _writable_parent(p, what)
    if p.exists() and not os.access(p, os.W_OK):
        raise PathCheckError(f"{what} {p}: not writable; check its permissions")
    return p


def output_dir(path: str | Path, what: str) -> Path:
    """path as a folder that exists or can be made and written; PathCheckError naming `what` otherwise."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise PathCheckError(f"{what} {p}: is a file; give a folder")
    _writable_parent(p, what, inside=True)
    return p
