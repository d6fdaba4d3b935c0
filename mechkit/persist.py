"""Checksummed, atomic files of NumPy arrays and a JSON header: the individual accountants' state files and saved
privacy curves.

A file is an ``.npz`` archive holding the arrays, a ``meta`` record (UTF-8 JSON) and a ``sha256`` record, the
SHA-256 of the header and of every array's name, dtype, shape and bytes.  Writing goes to a temporary file in the
same directory, fsynced, then ``os.replace``d over the target (a crash leaves the old file or the new one, never a
mix).  Reading never unpickles.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np


def digest(arrays: dict[str, np.ndarray], meta_bytes: bytes) -> str:
    """The SHA-256 (hex) of the header bytes and of each array's name, dtype, shape and bytes, by name.

    Parameters
    ----------
    arrays : name -> array.
    meta_bytes : the header.

    Returns
    -------
    The hex digest.
    """
    h = hashlib.sha256()
    h.update(meta_bytes)
    for name in sorted(arrays):
        a = np.asarray(arrays[name], order="C")
        h.update(f"\0{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def atomic_write(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same directory, fsync, ``os.replace``.

    Parameters
    ----------
    path : the target (replaced if it exists).
    data : the bytes.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable (best effort: not every platform can open a directory)
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def save(path: str | os.PathLike, meta: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write ``meta`` (JSON-serialisable) and ``arrays`` to ``path``, checksummed and atomically.

    Parameters
    ----------
    path : the file (replaced if it exists).
    meta : the header.
    arrays : name -> array (not "meta" or "sha256").
    """
    arrays = {k: np.asarray(v, order="C") for k, v in arrays.items()}
    meta_bytes = json.dumps(meta, sort_keys=True).encode("utf-8")
    sha = digest(arrays, meta_bytes)
    buf = io.BytesIO()
    np.savez(buf, meta=np.frombuffer(meta_bytes, dtype=np.uint8),
             sha256=np.frombuffer(sha.encode("ascii"), dtype=np.uint8), **arrays)
    atomic_write(path, buf.getvalue())


def load(path: str | os.PathLike, bad: Callable[[str], Exception]) -> tuple[dict, dict[str, np.ndarray]]:
    """The header and arrays of a file written by ``save``, verified.

    Parameters
    ----------
    path : the file.
    bad : why -> the exception to raise (naming the file and its kind).

    Returns
    -------
    (header dict, name -> array).

    Raises
    ------
    FileNotFoundError : no such file.
    Exception : ``bad(why)`` for a truncated or corrupt file, a missing record, a checksum mismatch or an unreadable
        header.
    """
    data = Path(path).read_bytes()  # a missing file raises FileNotFoundError, which names it
    try:
        z = np.load(io.BytesIO(data), allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError("not an npz archive")
        with z:
            arrays = {name: z[name] for name in z.files}
    except Exception as exc:  # noqa: BLE001 -- any failure to parse untrusted bytes means a bad file
        raise bad(f"truncated or corrupt ({type(exc).__name__}: {exc})") from None
    for key in ("meta", "sha256"):
        if key not in arrays:
            raise bad(f"the {key!r} record is missing")
    meta_bytes = arrays.pop("meta").tobytes()
    stored = arrays.pop("sha256").tobytes().decode("ascii", "replace")
    if digest(arrays, meta_bytes) != stored:
        raise bad("checksum mismatch (the file is corrupt)")
    try:
        meta = json.loads(meta_bytes.decode("utf-8"))
    except ValueError as exc:
        raise bad(f"unreadable header ({exc})") from None
    if not isinstance(meta, dict):
        raise bad("unreadable header (not a JSON object)")
    return meta, arrays
