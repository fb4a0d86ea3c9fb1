"""The ZeroMQ CURVE certificate every broker of a MiniCluster shares, in ``flux keygen``'s format.

Flux reads ``[bootstrap] curve_cert`` with its own small parser (flux-core's ``cert_read``), and a
certificate it refuses only shows up as brokers that never connect. So a user's
``spec.flux.curveCert`` is checked here with the same rules before anything is deployed, and the
certificates we generate are written in the exact layout ``flux keygen`` uses.

flux-core's rules, applied line by line:

* lines of at most 255 bytes (flux reads with a 256-byte buffer and would split longer ones);
* blank lines and ``#`` comments are skipped;
* ``metadata`` and ``curve`` are section lines and start at column 0; every other line is an
  indented (space or tab) ``key = "value"`` pair inside a section;
* keys use only ``A-Z a-z 0-9 . -``; values are double-quoted and use only letters, digits,
  space, tab and ``.-:+=^!/*?&<>()[]{}@%$#``;
* the ``curve`` section holds only ``public-key`` and ``secret-key``, both 40-character Z85;
* both keys must be present and ``curve_public(secret-key) == public-key``.

One rule is stricter than flux: a key given twice is refused (flux refuses a repeated metadata key
but silently lets a repeated curve key win, which hides which key is in use).

The public key is derived from the secret key here (``curve_public``: X25519 of the basepoint,
RFC 7748, in pure Python; tests check it against libzmq's over many keys), so checking a
certificate never imports pyzmq: every ``pulumi up`` given a certificate checks it, and importing
libzmq's bindings cost more than the rest of the check. pyzmq is imported only to generate keys.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, TypeVar

__all__ = [
    "CertificateError",
    "CertificateSource",
    "CurveCertificate",
    "choose",
    "curve_entries",
    "curve_public",
    "generate",
    "holds_secret_key",
    "parse",
    "public_key_in",
    "render",
    "write",
    "z85_decode",
    "z85_encode",
]

HEADER: Final = "#  ZeroMQ CURVE **Secret** Certificate\n#  DO NOT DISTRIBUTE\n"
MAX_LINE_BYTES: Final = 255
KEY_LENGTH: Final = 40
RESERVED_METADATA: Final = ("name", "keygen.hostname", "keygen.zmq-version")

T = TypeVar("T")


class CertificateSource(enum.Enum):
    """Where a MiniCluster's certificate comes from (see ``choose``)."""

    GIVEN = "given"
    """The deployer's: the component's ``curve_cert``, a stack's ``curveCert``, ``--curve-cert``."""
    SPEC = "spec"
    """The spec's ``flux.curveCert``."""
    NEW = "new"
    """None is given: one is made (the keygen Command, or locally by ``render``/``check``)."""


def choose(given: T | None, in_spec: str | None) -> tuple[T | str | None, CertificateSource]:
    """Which certificate a MiniCluster uses: the one precedence every surface follows.

    The deployer's certificate (``given``: the component's ``curve_cert`` argument, a stack's
    ``curveCert``, ``render --curve-cert FILE``) wins over the spec's ``flux.curveCert``
    (``in_spec``), as the ``name`` and ``namespace`` arguments win over the document's metadata:
    whoever deploys a shared spec decides. Without either, the value is None and one is made.
    """
    if given is not None:
        return given, CertificateSource.GIVEN
    if in_spec is not None:
        return in_spec, CertificateSource.SPEC
    return None, CertificateSource.NEW


_Z85_ALPHABET: Final = (
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
)
_Z85_VALUE: Final = {ch: i for i, ch in enumerate(_Z85_ALPHABET)}
_ALNUM: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_KEY_CHARS: Final = _ALNUM | frozenset(".-")
_VALUE_CHARS: Final = _ALNUM | frozenset(".-:+=^!/*?&<>()[]{}@%$# \t")
_WHITESPACE: Final = " \t\n\v\f\r"  # C isspace(), which flux's strstrip() uses
_SECTIONS: Final = ("metadata", "curve")
_CURVE_KEYS: Final = ("public-key", "secret-key")


class CertificateError(ValueError):
    """A certificate Flux would refuse; the message says which line or rule, never a key."""


def _z85_problem(text: str) -> str | None:
    """Why ``text`` is not a 32-byte Z85 key, as libzmq's decoder would judge it."""
    if len(text) != KEY_LENGTH:
        return f"it has {len(text)} characters, a Z85 key has exactly {KEY_LENGTH}"
    bad = sorted({ch for ch in text if ch not in _Z85_VALUE})
    if bad:
        shown = " ".join(repr(ch) for ch in bad)
        return f"it contains characters outside the Z85 alphabet: {shown}"
    for start in range(0, KEY_LENGTH, 5):
        value = 0
        for ch in text[start : start + 5]:
            value = value * 85 + _Z85_VALUE[ch]
        if value > 0xFFFFFFFF:
            return f"characters {start + 1}-{start + 5} do not decode to 4 bytes"
    return None


def _value_problem(value: str) -> str | None:
    bad = sorted({ch for ch in value if ch not in _VALUE_CHARS})
    if not bad:
        return None
    shown = " ".join(repr(ch) for ch in bad)
    return (
        f"contains {shown}; values may only use letters, digits, space, tab and "
        ".-:+=^!/*?&<>()[]{}@%$#"
    )


def _key_problem(key: str) -> str | None:
    if not key:
        return "a key is missing before '='"
    if set(key) <= _KEY_CHARS:
        return None
    return f"key {key!r} may only use letters, digits, '.' and '-'"


def _metadata_line(key: str, value: str) -> str:
    return f'    {key} = "{value}"'


@dataclass(frozen=True)
class CurveCertificate:
    """One CURVE key pair plus its ordered metadata, as ``flux keygen`` would write it.

    Construction checks everything that can be checked without libzmq (key format, metadata
    characters, line lengths, repeated keys), so ``render`` always writes a file Flux can read.
    Whether the two keys belong together is checked by ``parse`` (and holds by construction for
    ``generate``). The secret key is kept out of ``repr`` so that logs and Pulumi diffs never
    show it.
    """

    public_key: str
    secret_key: str = field(repr=False)
    metadata: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata", tuple((k, v) for k, v in self.metadata))
        for key_name, key in (("public-key", self.public_key), ("secret-key", self.secret_key)):
            problem = _z85_problem(key)
            if problem:
                raise CertificateError(f"curve.{key_name} is not a valid CURVE key: {problem}")
        seen: set[str] = set()
        for key, value in self.metadata:
            problem = _key_problem(key) or _value_problem(value)
            if problem:
                raise CertificateError(f"metadata.{key or '?'}: {problem}")
            if key in seen:
                raise CertificateError(f"metadata.{key} is given twice")
            seen.add(key)
            length = len(_metadata_line(key, value).encode())
            if length > MAX_LINE_BYTES:
                raise CertificateError(
                    f"metadata.{key} would make a {length}-byte line; "
                    f"flux reads at most {MAX_LINE_BYTES} bytes per line"
                )

    def meta(self, key: str) -> str | None:
        """A metadata value by key (flux's ``cert_meta_get``), None when absent."""
        return next((v for k, v in self.metadata if k == key), None)

    @property
    def name(self) -> str | None:
        """The ``name`` Flux logs when a peer presents this certificate."""
        return self.meta("name")

    @property
    def hostname(self) -> str | None:
        """``keygen.hostname``; the operator found workers fail to connect when it is empty."""
        return self.meta("keygen.hostname")


def _fail(lineno: int, message: str) -> CertificateError:
    return CertificateError(f"line {lineno}: {message}")


def parse(text: str) -> CurveCertificate:  # noqa: C901
    """Read a certificate with flux-core's rules, or say in user terms why Flux would refuse it.

    Messages never quote a key value, because the text is a secret.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    section: str | None = None
    metadata: list[tuple[str, str]] = []
    curve: dict[str, str] = {}
    for lineno, raw in enumerate(lines, start=1):
        length = len(raw.encode("utf-8", "surrogateescape"))
        if length > MAX_LINE_BYTES:
            raise _fail(
                lineno,
                f"the line is {length} bytes long; flux reads at most {MAX_LINE_BYTES} bytes "
                "per line",
            )
        indented = raw[:1] in (" ", "\t")
        stripped = raw.strip(_WHITESPACE)
        if not stripped or stripped.startswith("#"):
            continue
        if stripped in _SECTIONS:
            if indented:
                raise _fail(lineno, f"the section line {stripped!r} must not be indented")
            section = stripped
            continue
        if not indented:
            if "=" in stripped:
                raise _fail(
                    lineno,
                    'a key = "value" line must be indented with a space or tab, under a '
                    "'metadata' or 'curve' section line",
                )
            # Inside the curve section, or before any section (a bare key pasted as the whole
            # certificate), the stray text may be a key: never echo it.
            shown = repr(stripped[:40]) if section == "metadata" else "this line"
            raise _fail(
                lineno,
                f"{shown} is not a section: only 'metadata' and 'curve' start at column 0",
            )
        if section is None:
            raise _fail(lineno, "a key/value line comes before any 'metadata' or 'curve' line")
        key, value = _parse_pair(lineno, section, stripped)
        if section == "metadata":
            if any(k == key for k, _ in metadata):
                raise _fail(lineno, f"metadata.{key} is given twice")
            metadata.append((key, value))
        else:
            if key in curve:
                raise _fail(lineno, f"curve.{key} is given twice")
            problem = _z85_problem(value)
            if problem:
                raise _fail(lineno, f"curve.{key} is not a valid CURVE key: {problem}")
            curve[key] = value
    public = curve.get("public-key")
    secret = curve.get("secret-key")
    if public is None:
        raise CertificateError(
            "curve.public-key is missing: the certificate needs a 'curve' section with "
            "public-key and secret-key"
        )
    if secret is None:
        raise CertificateError(
            "curve.secret-key is missing: every Flux broker needs the secret key (this looks "
            "like a public certificate; use the secret one that flux keygen writes)"
        )
    if _curve_public(secret) != public:
        raise CertificateError(
            "curve.secret-key does not match curve.public-key: the keys come from different "
            "key pairs; regenerate the certificate rather than editing one key"
        )
    return CurveCertificate(public, secret, tuple(metadata))


def _parse_pair(lineno: int, section: str, stripped: str) -> tuple[str, str]:
    """Split ``key = "value"`` the way flux does: at the first '=', both sides trimmed."""
    key, equals, rest = stripped.partition("=")
    if not equals:
        raise _fail(lineno, f'expected key = "value" in the {section} section')
    key = key.strip(_WHITESPACE)
    problem = _key_problem(key)
    if problem:
        raise _fail(lineno, problem)
    if section == "curve" and key not in _CURVE_KEYS:
        raise _fail(
            lineno,
            f"the curve section may only hold public-key and secret-key, not {key!r}",
        )
    quoted = rest.strip(_WHITESPACE)
    if len(quoted) < 2 or quoted[0] != '"' or quoted[-1] != '"':
        example = '"<40 Z85 characters>"' if section == "curve" else '"flux-sample"'
        raise _fail(
            lineno, f"the value of {section}.{key} must be double-quoted, e.g. {key} = {example}"
        )
    value = quoted[1:-1]
    problem = _value_problem(value)
    if problem:
        if section == "curve":  # never echo a secret, even partly
            raise _fail(lineno, f"curve.{key} is not a valid CURVE key: {_z85_problem(value)}")
        raise _fail(lineno, f"{section}.{key} {problem}")
    return key, value


@functools.lru_cache(maxsize=64)
def _curve_public(secret: str) -> str:
    # Cached: a run checks the same certificate more than once (the argument, then the Output).
    return z85_encode(curve_public(z85_decode(secret)))


# --- Curve25519 and Z85 (the two libzmq does for curve_public) --------------------------------
_P: Final = 2**255 - 19
_A24: Final = 121665  # (486662 - 2) / 4
_BASEPOINT: Final = 9


def curve_public(secret: bytes) -> bytes:
    """The X25519 public key of a 32-byte secret key: its scalar product with the basepoint
    (RFC 7748, section 5: the Montgomery ladder on the clamped scalar), as libzmq's
    ``zmq_curve_public`` (``crypto_scalarmult_base``) computes it. Only ever used to check a
    certificate's own pair, so it need not be constant-time."""
    if len(secret) != 32:
        raise ValueError("a CURVE secret key is 32 bytes")
    clamped = bytearray(secret)
    clamped[0] &= 248
    clamped[31] &= 127
    clamped[31] |= 64
    k = int.from_bytes(clamped, "little")
    x1 = _BASEPOINT
    x2, z2, x3, z3 = 1, 0, x1, 1
    swap = 0
    for t in range(254, -1, -1):
        bit = (k >> t) & 1
        if swap ^ bit:
            x2, x3, z2, z3 = x3, x2, z3, z2
        swap = bit
        a, b = x2 + z2, x2 - z2
        aa, bb = a * a % _P, b * b % _P
        e = aa - bb
        c, d = x3 + z3, x3 - z3
        da, cb = d * a % _P, c * b % _P
        x3 = (da + cb) ** 2 % _P
        z3 = x1 * (da - cb) ** 2 % _P
        x2 = aa * bb % _P
        z2 = e * (aa + _A24 * e) % _P
    if swap:
        x2, z2 = x3, z3
    return (x2 * pow(z2, _P - 2, _P) % _P).to_bytes(32, "little")


def z85_decode(text: str) -> bytes:
    """The bytes of a Z85 string (ZeroMQ RFC 32); ``_z85_problem`` has already checked it."""
    out = bytearray()
    for start in range(0, len(text), 5):
        value = 0
        for ch in text[start : start + 5]:
            value = value * 85 + _Z85_VALUE[ch]
        out += value.to_bytes(4, "big")
    return bytes(out)


def z85_encode(data: bytes) -> str:
    """The Z85 string of ``data`` (a multiple of 4 bytes)."""
    out = []
    for start in range(0, len(data), 4):
        value = int.from_bytes(data[start : start + 4], "big")
        chunk = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            chunk.append(_Z85_ALPHABET[digit])
        out.append("".join(reversed(chunk)))
    return "".join(out)


# --- finding keys in text that may not be a certificate file -----------------------------------
# The policy rules ask two questions of any text (a ConfigMap value, a script, a Secret): does it
# carry a secret key, and which public key does it name. They must answer for text Flux would
# refuse too (a certificate pasted, indented, into a heredoc), so this reads the same format with
# one relaxation: indentation decides what belongs to a ``curve`` section, wherever it starts.


def curve_entries(text: str) -> list[tuple[str, str]]:
    """``(key, value)`` for every ``key = "value"`` under a ``curve`` section, quotes stripped."""
    out: list[tuple[str, str]] = []
    curve_indent: int | None = None
    for raw in text.splitlines():
        stripped = raw.strip(_WHITESPACE)
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(raw) - len(raw.lstrip(_WHITESPACE))
        if curve_indent is not None and indent <= curve_indent:
            curve_indent = None
        if stripped == "curve":
            curve_indent = indent
            continue
        if curve_indent is None:
            continue
        key, equals, value = stripped.partition("=")
        key = key.strip(_WHITESPACE)
        if equals and key and set(key) <= _KEY_CHARS:
            out.append((key, value.strip(_WHITESPACE).strip('"')))
    return out


def holds_secret_key(text: str) -> bool:
    """Whether ``text`` has a ``curve`` section with a ``secret-key`` entry."""
    return any(key == "secret-key" for key, _ in curve_entries(text))


def public_key_in(text: str) -> str | None:
    """The ``curve`` section's ``public-key`` in ``text``, or None when it has none."""
    return next((value for key, value in curve_entries(text) if key == "public-key"), None)


def render(cert: CurveCertificate) -> str:
    """The certificate file, byte for byte in ``flux keygen``'s layout (metadata in order)."""
    body = "".join(_metadata_line(k, v) + "\n" for k, v in cert.metadata)
    return (
        f"{HEADER}\nmetadata\n{body}curve\n"
        f'    public-key = "{cert.public_key}"\n'
        f'    secret-key = "{cert.secret_key}"\n'
    )


def generate(
    name: str, hostname: str, *, extra_metadata: Mapping[str, str] | None = None
) -> CurveCertificate:
    """A fresh key pair with ``flux keygen``'s metadata.

    There is no timestamp unless the caller passes one in ``extra_metadata``: whether the output
    is reproducible is the caller's decision (the Pulumi layer keeps one certificate per stack).
    An empty hostname is refused because the Flux Operator saw workers fail to connect with one.
    """
    if not name:
        raise CertificateError("the certificate name must not be empty")
    if not hostname:
        raise CertificateError(
            "keygen.hostname must not be empty (workers failed to connect with an empty one)"
        )
    extras = dict(extra_metadata or {})
    clash = [key for key in RESERVED_METADATA if key in extras]
    if clash:
        raise CertificateError(
            f"extra_metadata cannot set {', '.join(clash)}: it is set by generate() itself"
        )
    import zmq

    if not zmq.has("curve"):
        raise RuntimeError("this libzmq was built without CURVE support; cannot generate keys")
    public, secret = zmq.curve_keypair()
    metadata = (
        ("name", name),
        ("keygen.hostname", hostname),
        ("keygen.zmq-version", zmq.zmq_version()),
        *extras.items(),
    )
    return CurveCertificate(public.decode("ascii"), secret.decode("ascii"), metadata)


def write(cert: CurveCertificate, path: str | os.PathLike[str]) -> None:
    """Write the certificate so that it is never, even briefly, readable by anyone else.

    Flux refuses a certificate readable by group or other, and a half-written file must never
    be seen: the text goes to a fresh 0600 file next to ``path`` that then replaces ``path``.
    """
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    temporary = os.path.join(directory, f".{os.path.basename(target)}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii", newline="\n") as handle:
            os.fchmod(handle.fileno(), 0o600)  # a umask can only narrow it; make it exact
            handle.write(render(cert))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
