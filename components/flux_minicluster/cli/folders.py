"""Rendered objects on disk: folders ``kubectl apply -f`` accepts, and renders that repeat.

A rendered folder holds Kubernetes objects only, one file per object, numbered in apply order
(``NN-<kind>-<name>.yaml``), so ``kubectl apply -f DIR`` works and the same objects always get
the same file names. Anything else a render produces goes beside the folder, never in it:

* patches Pulumi applies after the objects (a Job's size, applied server-side) go to
  ``DIR/patches/``, which ``kubectl apply -f DIR`` does not read (it does not recurse);
* a stack's outputs go to ``<DIR>.outputs.json``, secret outputs masked unless asked for.

A render replaces exactly the files the previous render wrote there, and never a file of the
user's. The folder is not trusted to say which is which:

* the hidden index ``.minicluster-render`` (kubectl reads only ``.yaml``, ``.yml`` and ``.json``)
  records the SHA-256 of each file written; a listed file is deleted or replaced only while it
  still holds those bytes and has a name a render writes (``NN-<kind>-<name>.yaml``, or beside
  a folder with a name of its own ``<DIR>.<suffix>``; ``-d .`` has none), so a file the user
  changed, or put in place of one, or listed in the index by hand, is the user's;
* a name the render would write that holds a file of the user's (or a symbolic link, or
  anything else) is refused with its name before anything changes; no link is ever followed,
  nor is a stack's folder (``DIR/<stack>``) that is a link;
* each file is written to a temporary file (``.<name>.<pid>.minicluster-tmp``) and renamed
  into place, and the index is written first with every file the render may leave (the
  previous ones and the new ones, each with the hashes it may hold): a render killed half-way
  leaves a folder the next render cleans up, its temporary files included;
* a render holds a lock (``.minicluster-render.lock``) for its whole write; a second render
  into the same folder meanwhile is refused, instead of mixing two clusters' files.

A Secret's file is readable by its owner only, and so is a file that holds a secret output.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.flux import certificate
from flux_minicluster.core.reading import documents, yamlio
from flux_minicluster.core.render.manifests import to_yaml

__all__ = [
    "INDEX",
    "LOCK",
    "MASK",
    "PATCHES",
    "load_or_create_certificate",
    "outputs_json",
    "read_certificate",
    "write_folder",
]

INDEX: Final = ".minicluster-render"
LOCK: Final = ".minicluster-render.lock"
PATCHES: Final = "patches"
MASK: Final = "[secret]"
PRIVATE: Final = 0o600
PUBLIC: Final = 0o644
_INDEX_HEADER: Final = (
    "# minicluster render: the files the last render wrote here, as SHA-256 and path;\n"
    "# only a file that still holds these bytes is replaced or removed by the next render.\n"
)
# The paths an index may name: a numbered object file of the folder or of its patches/ (the
# only names a render writes there), or one beside the folder. A file of any other name is never
# the render's, whatever an index says of it.
_INDEXED: Final = re.compile(
    rf"(?:{PATCHES}/)?[0-9]{{2,}}-[a-z0-9]+-[^/\x00]+\.yaml|\.\./(?!\.\.?$)[^/\x00]+"
)
_TEMPORARY: Final = ".minicluster-tmp"


@dataclass(frozen=True)
class _File:
    relative: str  # to the folder: NAME, patches/NAME or ../NAME (beside it)
    text: str
    mode: int

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def write_folder(
    folder: Path,
    objects: list[dict[str, Any]],
    patches: Iterable[dict[str, Any]] = (),
    beside: Mapping[str, tuple[str, int]] | None = None,
    *,
    named_by_render: bool = False,
) -> list[Path]:
    """Write ``objects`` (and ``patches``) into ``folder``, and ``beside`` (name -> text, mode;
    each name ``<folder name>.<suffix>``) next to it, replacing the previous render's files;
    see the module for what is safe.

    ``named_by_render``: the render chose the folder's name (a stack's ``DIR/<stack>``), so a
    symbolic link there is not the user's choice of where to write: it is refused, never
    followed (the Secret and the outputs beside would land wherever it points). A folder the
    user names (``-d DIR``) may be a link. Files beside a folder need it to be a real one:
    ``<folder>/../`` of a link is the parent of its target.

    Returns the paths written into the folder, in order.
    """
    files = _numbered("", objects) + _numbered(f"{PATCHES}/", list(patches))
    files += [_File(f"../{name}", text, mode) for name, (text, mode) in (beside or {}).items()]
    if not all(_indexable(folder, f.relative) for f in files):
        raise ValueError(f"a file beside {folder} is named after it: {folder.name}.<suffix>")
    if (named_by_render or beside) and folder.is_symlink():
        raise SpecError(
            Problem(
                "",
                f"{folder}: a symbolic link (never followed); the render writes this folder "
                "itself: move the link away or render into another folder",
            )
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise SpecError(Problem("", f"cannot create {folder}: {err.strerror}")) from None
    with _locked(folder):
        previous = _read_index(folder)
        _remove_temporaries(folder, [INDEX, *previous, *(f.relative for f in files)])
        ours = {rel for rel, digests in previous.items() if _holds(folder, rel, digests)}
        # A file that already holds exactly what this render writes there loses nothing when
        # replaced (a folder an earlier version rendered, whose index held names only).
        ours |= {f.relative for f in files if _holds(folder, f.relative, {f.digest})}
        clashes = [_clash(folder, f.relative) for f in files if f.relative not in ours]
        if problems := [c for c in clashes if c is not None]:
            raise SpecError(problems)
        if any(f.relative.startswith(f"{PATCHES}/") for f in files):
            _subfolder(folder / PATCHES)
        # Every file this render may leave behind, should it be killed from here on.
        intent = {rel: set(previous.get(rel, ())) for rel in ours}
        for f in files:
            intent.setdefault(f.relative, set()).add(f.digest)
        _write_index(folder, intent)
        for rel in sorted(ours - {f.relative for f in files}):
            _remove(folder / rel)
        for f in files:
            _replace(folder / f.relative, f.text, f.mode)
        patches_folder = folder / PATCHES
        if _is_real_folder(patches_folder) and not any(patches_folder.iterdir()):
            patches_folder.rmdir()
        _write_index(folder, {f.relative: {f.digest} for f in files})
    return [folder / f.relative for f in files if not f.relative.startswith("../")]


def _numbered(prefix: str, objects: list[dict[str, Any]]) -> list[_File]:
    width = max(2, len(str(len(objects))))
    out = []
    for number, manifest in enumerate(objects, start=1):
        kind = str(manifest["kind"]).lower()
        name = str(manifest["metadata"]["name"])
        # A Secret's file holds the certificate's secret key: readable by its owner only.
        mode = PRIVATE if manifest["kind"] == "Secret" else PUBLIC
        out.append(
            _File(f"{prefix}{number:0{width}d}-{kind}-{name}.yaml", to_yaml([manifest]), mode)
        )
    return out


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """The folder's render lock, held until the block ends; refused when another render holds
    it."""
    lock = folder / LOCK
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, PUBLIC)
    except OSError as err:
        why = "a symbolic link (never followed)" if err.errno == errno.ELOOP else err.strerror
        raise SpecError(Problem("", f"{lock}: cannot take the render's lock: {why}")) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SpecError(Problem("", f"{lock}: cannot take the render's lock: not a file"))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SpecError(
                Problem(
                    "",
                    "another render is writing into this folder (it holds "
                    f"{LOCK}); run one render at a time into one folder",
                ),
                source=str(folder),
            ) from None
        yield
    finally:
        os.close(fd)


def _read_index(folder: Path) -> dict[str, set[str]]:
    """The index's entries (path -> the SHA-256 digests it may hold); a line that is not one
    is ignored, and so is an index that is not a plain file."""
    try:
        text = _read_plain(folder / INDEX)
    except OSError:
        return {}
    entries: dict[str, set[str]] = {}
    for line in (text or "").splitlines():
        digest, _, rel = line.partition("  ")
        if re.fullmatch(r"[0-9a-f]{64}", digest) and _indexable(folder, rel):
            entries.setdefault(rel, set()).add(digest)
    return entries


def _indexable(folder: Path, rel: str) -> bool:
    """Whether an index may name ``rel``: a file of the folder or of its patches/, or one beside
    it named after it (``<folder>.outputs.json``), never anything further."""
    beside = rel.removeprefix("../")
    if beside != rel and (
        # `-d .` (or `..`) has no name to be named after: ``../.<dotfile>`` is not beside it
        folder.name in ("", ".", "..") or not beside.startswith(f"{folder.name}.")
    ):
        return False
    return _INDEXED.fullmatch(rel) is not None


def _write_index(folder: Path, entries: Mapping[str, set[str]]) -> None:
    lines = [f"{d}  {rel}\n" for rel in sorted(entries) for d in sorted(entries[rel])]
    _replace(folder / INDEX, _INDEX_HEADER + "".join(lines), PUBLIC)


def _read_plain(path: Path, limit: int = yamlio.MAX_BYTES) -> str | None:
    """A regular file's text, the link itself never followed; None when it is not one (or is
    larger than ``limit``, or not UTF-8). OSError when it cannot be opened at all."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = handle.read(limit + 1)
    if len(data) > limit:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _holds(folder: Path, rel: str, digests: set[str]) -> bool:
    """Whether ``rel`` is a plain file (through no link) that holds one of ``digests``."""
    if rel.startswith(f"{PATCHES}/") and not _is_real_folder(folder / PATCHES):
        return False
    try:
        text = _read_plain(folder / rel, limit=2 * yamlio.MAX_BYTES)
    except OSError:
        return False
    return text is not None and hashlib.sha256(text.encode("utf-8")).hexdigest() in digests


def _clash(folder: Path, rel: str) -> Problem | None:
    """The problem of writing ``rel`` where something that is not the last render's file is."""
    path = folder / rel
    if rel.startswith(f"{PATCHES}/"):
        parent = folder / PATCHES
        if not parent.exists() and not parent.is_symlink():
            return None
        if not _is_real_folder(parent):
            return Problem("", f"{parent}: not a folder of the render's; move it away")
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    what = (
        "a symbolic link (never followed)"
        if stat.S_ISLNK(info.st_mode)
        else "a file the last render here did not write, or one changed since"
        if stat.S_ISREG(info.st_mode)
        else "not a file"
    )
    return Problem(
        "",
        f"{path}: {what}; the render would write this name: move it away or "
        "render into another folder",
    )


def _remove_temporaries(folder: Path, relatives: Iterable[str]) -> None:
    """The temporary files a killed render left (``.<name>.<pid>.minicluster-tmp``, beside a
    file it was writing): each a plain file, never a link."""
    for rel in set(relatives):
        path = folder / rel
        if rel.startswith(f"{PATCHES}/") and not _is_real_folder(path.parent):
            continue
        pattern = re.compile(rf"\.{re.escape(path.name)}\.[0-9]+{re.escape(_TEMPORARY)}")
        with contextlib.suppress(OSError):
            for entry in os.scandir(path.parent):
                if pattern.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                    _remove(Path(entry.path))


def _is_real_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except FileNotFoundError:
        return False


def _subfolder(path: Path) -> None:
    try:
        path.mkdir()
    except FileExistsError:
        if not _is_real_folder(path):
            raise SpecError(Problem("", f"{path}: not a folder of the render's")) from None
    except OSError as err:
        raise SpecError(Problem("", f"cannot create {path}: {err.strerror}")) from None


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as err:
        raise SpecError(Problem("", f"cannot remove {path}: {err.strerror}")) from None


def _replace(path: Path, text: str, mode: int) -> None:
    """``text`` into ``path`` atomically: a temporary file beside it, renamed over it."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}{_TEMPORARY}")
    try:
        fd = os.open(
            temporary,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            mode,
        )
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                os.fchmod(handle.fileno(), mode)
                handle.write(text)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise
    except OSError as err:
        if err.errno == errno.EEXIST:
            message = f"cannot write {path}: {temporary.name} is in the way"
        else:
            message = f"cannot write {path}: {err.strerror}"
        raise SpecError(Problem("", message)) from None


def outputs_json(
    stack: str,
    outputs: Mapping[str, Any],
    secret_names: Iterable[str],
    *,
    show_secrets: bool = False,
) -> tuple[str, int]:
    """A stack's outputs as JSON (each secret output masked unless ``show_secrets``) and the
    mode of its file."""
    secrets = sorted(secret_names)
    values = {
        key: (value if show_secrets or key not in secrets else MASK)
        for key, value in sorted(outputs.items())
    }
    payload = {
        "stack": stack,
        "note": "offline rendering under Pulumi's mock runtime; nothing was deployed",
        "outputs": values,
        "secretOutputNames": secrets,
    }
    mode = PRIVATE if show_secrets and secrets else PUBLIC
    return json.dumps(payload, indent=2, sort_keys=True) + "\n", mode


def read_certificate(path: Path) -> str:
    """The certificate in ``path``, checked as Flux would read it (a problem names the file)."""
    try:
        text = documents.read_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(
            Problem("", "not a CURVE certificate: not UTF-8 text (flux keygen writes text)"),
            source=str(path),
        ) from None
    try:
        certificate.parse(text)
    except certificate.CertificateError as err:
        raise SpecError(Problem("", str(err)), source=str(path)) from None
    return text


def load_or_create_certificate(path: Path, name: str, hostname: str) -> tuple[str, bool]:
    """The certificate in ``path``, or a new one written there (0600) when it does not exist.

    Returns the text and whether it was created. The same file gives the same Secret and pod
    template on every render, so a rendered cluster can be applied again (GitOps). A symbolic
    link to nothing is refused, never replaced: it points into a secret store that is not
    mounted, and a new certificate in its place would replace the Secret and the Job.
    """
    if path.is_symlink() and not path.exists():
        raise SpecError(
            Problem(
                "",
                f"a symbolic link to {os.readlink(path)}, which does not exist (a secret store "
                "not mounted?); mount it, or remove the link to make a new certificate here",
            ),
            source=str(path),
        )
    if path.exists():
        return read_certificate(path), False
    # A typo in the folder must not quietly make a new key: that replaces the Secret and the Job.
    folder = path.parent if path.parent != Path() else Path.cwd()
    if not folder.is_dir():
        raise SpecError(
            Problem(
                "",
                f"the folder {path.parent} does not exist: check the path of the certificate you "
                "meant, or create the folder to make a new certificate there",
            ),
            source=str(path),
        )
    cert = certificate.generate(name=name, hostname=hostname)
    # Written beside it, then linked into place: a link never replaces a file, so two renders
    # making the certificate at once both end up with the one that got there first, and neither
    # prints a certificate the other then replaces.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.new")
    try:
        certificate.write(cert, temporary)
        os.link(temporary, path)
    except FileExistsError:
        return read_certificate(path), False
    except OSError as err:
        raise SpecError(Problem("", f"cannot write: {err.strerror}"), source=str(path)) from None
    finally:
        temporary.unlink(missing_ok=True)
    return certificate.render(cert), True


def created_certificate_warning(path: Path) -> str:
    """What stderr says when ``--curve-cert FILE`` did not exist and a new certificate is there."""
    return (
        f"WARNING: {path} did not exist: created a NEW CURVE certificate there (mode 0600). If you "
        "meant an existing certificate, the path is wrong: a new certificate changes the curve "
        "Secret and replaces the Job"
    )
