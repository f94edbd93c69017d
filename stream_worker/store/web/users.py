"""The console's users: names, roles and scrypt password hashes from a YAML/JSON file (a Kubernetes
Secret), or, when none is configured, one admin made on the first start with a random password that
is printed once (as Jupyter does) and kept only as a hash in the data directory.

File format (YAML or JSON):

    users:
      - name: alice
        role: admin            # admin: also changes watch lists, cameras, acknowledges alerts
        password_hash: scrypt$16384$8$1$...   # stream-worker store hash-password
        token_hashes: [sha256$...]            # API bearer tokens (store hash-password --token)
      - name: bob
        role: viewer
        password_hash: scrypt$...

API tokens are random strings kept as SHA-256 hashes: a token has enough entropy that a slow hash
adds nothing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

Role = Literal["viewer", "admin"]
ROLES: tuple[str, ...] = ("viewer", "admin")
GENERATED_USERS_FILE = "console-users.json"
SECRET_KEY_FILE = "console-secret.key"
FIRST_ADMIN = "admin"
SCRYPT_N, SCRYPT_R, SCRYPT_P, SCRYPT_LEN = 2**14, 8, 1, 32
MAX_PASSWORD_LENGTH = 1024
KEYS = frozenset({"name", "role", "password_hash", "token_hashes"})


class UsersError(ValueError):
    """The users file cannot be read or has a bad entry (the message names it, never a secret)."""


@dataclass(frozen=True)
class User:
    name: str
    role: Role
    password_hash: str = field(repr=False)
    token_hashes: tuple[str, ...] = field(default=(), repr=False)

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def hash_password(password: str) -> str:
    """`scrypt$N$r$p$salt$hash` (base64), what the users file's password_hash holds."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=SCRYPT_LEN
    )
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    """Whether `password` matches the hash (constant time); False, never an error, for a bad hash."""
    if len(password) > MAX_PASSWORD_LENGTH:
        return False
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest, validate=True)
        actual = hashlib.scrypt(
            password.encode("utf-8"),
            salt=base64.b64decode(salt, validate=True),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=len(expected),
            maxmem=256 * 1024 * 1024,
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


def hash_token(token: str) -> str:
    """`sha256$hex` of an API token."""
    return "sha256$" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(32)


_DUMMY_HASH = "scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$" + _b64(bytes(32))


class Users:
    """The configured users, by name; sign-in by password and by bearer token."""

    def __init__(self, users: Iterable[User]) -> None:
        self.by_name = {user.name: user for user in users}
        self._tokens = {digest: user for user in self.by_name.values() for digest in user.token_hashes}

    def get(self, name: Any) -> User | None:
        return self.by_name.get(name) if isinstance(name, str) else None

    def authenticate(self, name: str, password: str) -> User | None:
        user = self.by_name.get(name)
        if user is None:
            verify_password(password, _DUMMY_HASH)  # the same work either way: no user enumeration
            return None
        return user if verify_password(password, user.password_hash) else None

    def by_token(self, token: str) -> User | None:
        return self._tokens.get(hash_token(token)) if token else None


def parse_users(data: Any, source: str) -> Users:
    """Users from a decoded YAML/JSON document; UsersError naming the first problem."""
    entries = data.get("users") if isinstance(data, dict) else None
    if isinstance(entries, dict):
        entries = [{"name": name, **(value or {})} for name, value in entries.items()]
    if not isinstance(entries, list) or not entries:
        raise UsersError(f"{source}: expected `users:` with at least one user")
    users = []
    for index, entry in enumerate(entries):
        where = f"{source}: users[{index}]"
        if not isinstance(entry, dict):
            raise UsersError(f"{where}: expected a mapping")
        name, role, digest = entry.get("name"), entry.get("role", "viewer"), entry.get("password_hash")
        tokens = entry.get("token_hashes") or []
        if not isinstance(name, str) or not name.strip() or len(name) > 128:
            raise UsersError(f"{where}: name must be a non-empty string (at most 128 characters)")
        if role not in ROLES:
            raise UsersError(f"{where} ({name}): role must be one of {', '.join(ROLES)}")
        if not isinstance(digest, str) or not digest.startswith("scrypt$") or digest.count("$") != 5:
            raise UsersError(
                f"{where} ({name}): password_hash must be a scrypt$... hash (store hash-password)"
            )
        if not isinstance(tokens, list) or not all(
            isinstance(t, str) and t.startswith("sha256$") for t in tokens
        ):
            raise UsersError(f"{where} ({name}): token_hashes must be a list of sha256$... hashes")
        unknown = set(entry) - KEYS
        if unknown:
            raise UsersError(f"{where} ({name}): unknown keys {sorted(unknown)}")
        users.append(User(name.strip(), role, digest, tuple(tokens)))
    if len({user.name for user in users}) != len(users):
        raise UsersError(f"{source}: a user name appears twice")
    return Users(users)


def load_users_file(path: Path) -> Users:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UsersError(f"{path}: cannot read it ({type(error).__name__})") from None
    try:
        data = yaml.safe_load(text)  # JSON is YAML too
    except yaml.YAMLError:
        raise UsersError(f"{path}: not YAML or JSON") from None
    return parse_users(data, str(path))


def _write_private(path: Path, text: str) -> None:
    """A new file only its owner reads (0600); FileExistsError when another process made it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)


def load_or_create(users_file: Path | None, data_dir: Path) -> tuple[Users, str | None]:
    """The users to sign in: `users_file` when configured; else the generated admin in `data_dir`,
    made now (with the random password returned, to print once) on the first start."""
    if users_file is not None:
        return load_users_file(users_file), None
    generated = data_dir / GENERATED_USERS_FILE
    if generated.exists():
        return load_users_file(generated), None
    password = secrets.token_urlsafe(18)
    document = {"users": [{"name": FIRST_ADMIN, "role": "admin", "password_hash": hash_password(password)}]}
    try:
        _write_private(generated, json.dumps(document, indent=2) + "\n")
    except FileExistsError:  # another process made it first: its password was printed there
        return load_users_file(generated), None
    return parse_users(document, str(generated)), password


def announce(password: str, data_dir: Path, address: str | None) -> None:
    """Print the first admin's password once, on stdout (where `up` and the demo pick it up)."""
    where = f" at {address}" if address else ""
    print(
        f"console: sign in{where} as {FIRST_ADMIN!r} with password {password}\n"
        f"console: this password is shown once; only its hash is kept ({data_dir / GENERATED_USERS_FILE}; "
        "delete that file for a new one, or configure --users-file)",
        flush=True,
    )


def secret_key(data_dir: Path, key_file: Path | None = None) -> str:
    """The key that signs session cookies and makes CSRF tokens: `key_file`'s when configured (one
    Secret for every replica), else made once and kept 0600 in the data directory. Changing it
    signs everyone out."""
    if key_file is not None:
        try:
            key = key_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise UsersError(f"{key_file}: cannot read the session key ({type(error).__name__})") from None
        if len(key) < 32:
            raise UsersError(f"{key_file}: the session key needs at least 32 characters")
        return key
    path = data_dir / SECRET_KEY_FILE
    try:
        return path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        pass
    key = secrets.token_urlsafe(48)
    try:
        _write_private(path, key + "\n")
    except FileExistsError:
        return path.read_text(encoding="ascii").strip()
    return key
