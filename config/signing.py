"""Signed results: every exported record (exports.eee) and board snapshot
(leaderboard.pages.history_views) carries an Ed25519 signature, which anyone can check against
the site's public keys, published at KEYS_PATH, so that a figure quoted elsewhere can be
verified. Keys are rotated by `manage.py signing_key_rotate`: the new one signs from then on;
the old ones stay published, marked retired, so that what they signed still verifies.

What is signed is the canonical JSON of the object (keys sorted, no spaces, UTF-8), without
its signature; a signature is {"algorithm": "Ed25519", "key_id", "value"} (value: base64 of
the 64 signature bytes). The keys live in SIGNING_KEY_DIR, one PEM file per key and
keys.json listing them; every web process must see the same folder (a volume shared by the
web machines)."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
from datetime import UTC, datetime
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from django.conf import settings

ALGORITHM = "Ed25519"
KEYS_PATH = "/.well-known/signing-keys.json"
_INDEX = "keys.json"


def canonical(value) -> bytes:
    """The bytes a signature is made over: JSON with sorted keys and no spaces, in UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode()


def _folder() -> Path:
    folder = Path(settings.SIGNING_KEY_DIR)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


@contextlib.contextmanager
def _locked():
    """One process at a time reads-then-writes the key folder (two web processes signing
    their first export at once make one key, not two)."""
    with open(_folder() / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _index() -> list[dict]:
    path = _folder() / _INDEX
    return json.loads(path.read_text()) if path.exists() else []


def _write_index(keys: list[dict]) -> None:
    path = _folder() / _INDEX
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(keys, indent=2))
    os.replace(temporary, path)


def _new_key(keys: list[dict]) -> dict:
    private = Ed25519PrivateKey.generate()
    public = private.public_key().public_bytes(serialization.Encoding.Raw,
                                               serialization.PublicFormat.Raw)
    key_id = base64.urlsafe_b64encode(public[:9]).decode()  # 12 characters, from the key
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    path = _folder() / f"{key_id}.pem"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(pem)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    for key in keys:
        if key["retired"] is None:
            key["retired"] = now
    entry = {"key_id": key_id, "algorithm": ALGORITHM,
             "public_key": base64.b64encode(public).decode(), "created": now, "retired": None}
    _write_index([*keys, entry])
    return entry


# The current key as this process last read it, by the index file's modification time: a
# board's export signs a record a row, and reads the folder once (a rotation replaces the
# index, which changes its time).
_loaded: tuple[int, dict, Ed25519PrivateKey] | None = None


def _active() -> tuple[dict, Ed25519PrivateKey]:
    global _loaded
    index = _folder() / _INDEX
    stamp = index.stat().st_mtime_ns if index.exists() else None
    if _loaded is not None and _loaded[0] == stamp:
        return _loaded[1], _loaded[2]
    keys = _index()
    current = next((k for k in reversed(keys) if k["retired"] is None), None)
    if current is None:
        with _locked():
            keys = _index()
            current = next((k for k in reversed(keys) if k["retired"] is None), None) \
                or _new_key(keys)
    pem = (_folder() / f"{current['key_id']}.pem").read_bytes()
    private = serialization.load_pem_private_key(pem, password=None)
    _loaded = (index.stat().st_mtime_ns, current, private)
    return current, private


def rotate() -> dict:
    """A new signing key (the current one retired, still published); its entry."""
    with _locked():
        return _new_key(_index())


def public_keys() -> dict:
    """What KEYS_PATH publishes: every key that ever signed here, newest last, made on first
    use."""
    _active()
    return {"algorithm": ALGORITHM, "signed": "canonical JSON: keys sorted, no spaces, UTF-8, "
            "without the signature", "keys": _index()}


def signature(value) -> dict:
    """The signature of `value` (a JSON-able object) by the current key."""
    entry, private = _active()
    return {"algorithm": ALGORITHM, "key_id": entry["key_id"],
            "value": base64.b64encode(private.sign(canonical(value))).decode()}


def verify(value, signed: dict, keys: list[dict]) -> bool:
    """Whether `signed` is a signature of `value` by one of `keys` (KEYS_PATH's list): what
    anyone can run with the published keys alone."""
    key = next((k for k in keys if k["key_id"] == signed.get("key_id")), None)
    if key is None or signed.get("algorithm") != ALGORITHM:
        return False
    public = Ed25519PublicKey.from_public_bytes(base64.b64decode(key["public_key"]))
    try:
        public.verify(base64.b64decode(signed["value"]), canonical(value))
    except (InvalidSignature, ValueError):
        return False
    return True
