"""The per-user key that signs the program store's entries, so that only this user's processes can have written one.

An entry of `aejax.linker.program.saved_programs` is loaded only if its
signature, an HMAC-SHA256 of its header and payload under this key, holds:
an entry another user, or any process without the key, wrote or changed in
the compile directory is a miss. The key is 32 random bytes in the file
`KEY_FILE` of ``$AEJAX_KEY_DIR``, else of ``$XDG_CONFIG_HOME/aejax``, else
of ``~/.config/aejax``: never in the compile directory, which another user
may be able to write. The first process that needs it makes it, readable by
its user only (a 0600 file in a 0700 folder). A key that is not private (a
file or folder another user owns or may change, a file others may read) is
not used, and the store is off (`StoreKeyWarning`).
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
import threading
import warnings
from contextlib import suppress
from functools import cache
from pathlib import Path

KEY_DIRECTORY = "AEJAX_KEY_DIR"
"""The environment variable naming the folder of the key (tests point it at a temporary folder)."""

KEY_FILE = "store-key"

KEY_BYTES = 32


class StoreKeyWarning(UserWarning):
    """The program store's key cannot be made or read, or is not private: the store is off."""


def key_directory() -> Path | None:
    """The folder of the store's key: ``$AEJAX_KEY_DIR``, ``$XDG_CONFIG_HOME/aejax`` or ``~/.config/aejax``; ``None``
    without a home folder."""
    chosen = os.environ.get(KEY_DIRECTORY)
    if chosen:
        return Path(chosen)
    home = os.path.expanduser("~")  # left as it is when the home folder is unknown
    config = os.environ.get("XDG_CONFIG_HOME") or (None if home == "~" else Path(home) / ".config")
    return None if config is None else Path(config) / "aejax"


def store_key() -> bytes | None:
    """This user's key for the store's entries, made if there is none; ``None`` if it cannot be made, read or trusted."""
    folder = key_directory()
    if folder is None:
        _warn_unused(f"(no folder for it: {KEY_DIRECTORY}, XDG_CONFIG_HOME and the home folder are unknown)")
        return None
    return _key_in(folder)


def signature(key: bytes, signed: bytes) -> bytes:
    """The signature of ``signed`` under ``key``, as hexadecimal ASCII."""
    return hmac.new(key, signed, "sha256").hexdigest().encode()


def signed_by(key: bytes, signed: bytes, claimed: bytes) -> bool:
    """Whether ``claimed`` is the signature of ``signed`` under ``key`` (compared in constant time)."""
    return hmac.compare_digest(signature(key, signed), claimed)


@cache
def _key_in(folder: Path) -> bytes | None:
    path = folder / KEY_FILE
    try:
        if not path.exists():
            _make(path)
        unsafe = _not_private(folder, stat.S_IWGRP | stat.S_IWOTH) or _not_private(path, 0o077)
        key = None if unsafe else path.read_bytes()
    except OSError as error:
        unsafe = f"it cannot be made or read: {error}"
        key = None
    if unsafe or len(key) != KEY_BYTES:
        _warn_unused(f"{path} ({unsafe or f'it holds {len(key)} bytes, not {KEY_BYTES}'})")
        return None
    return key


@cache
def _warn_unused(which: str) -> None:
    """Warn, once, that the key ``which`` names is not used."""
    warnings.warn(
        f"the program store's key {which} is not used, so aejax saves and loads no programs. Make the key and "
        f"its folder private (chmod 600, chmod 700), remove a damaged key (a new one is made), or set "
        f"{KEY_DIRECTORY} to another folder",
        StoreKeyWarning,
        stacklevel=3,
    )


def _not_private(path: Path, forbidden: int) -> str | None:
    """Why ``path`` is not this user's alone (another owner, or one of the ``forbidden`` permission bits); ``None`` if it is."""
    found = path.stat()
    if found.st_uid != os.getuid():
        return f"{path} belongs to user {found.st_uid}"
    if found.st_mode & forbidden:
        return f"{path} has permissions {stat.filemode(found.st_mode)}"
    return None


def _make(path: Path) -> None:
    """Make a new key at ``path``, unless another process makes one first (its key is kept: it may have signed entries)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(secrets.token_bytes(KEY_BYTES))
        with suppress(FileExistsError):  # made by another process meanwhile
            os.link(temporary, path)
    finally:
        temporary.unlink()
