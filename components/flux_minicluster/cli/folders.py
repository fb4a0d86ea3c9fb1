"""Rendered objects on disk: folders ``kubectl apply -f`` accepts, and renders that repeat.

A rendered folder holds Kubernetes objects only, one file per object, numbered in apply order
(``NN-<kind>-<name>.yaml``), so ``kubectl apply -f DIR`` works and the same objects always get
the same file names. Anything else a render produces goes beside the folder, never in it:

* patches Pulumi applies after the objects (a Job's size, applied server-side) go to
  ``DIR/patches/``, which ``kubectl apply -f DIR`` does not read (it does not recurse);
* a stack's outputs go to ``<DIR>.outputs.json``, secret outputs masked unless asked for.

A render replaces exactly the files the previous render wrote there (listed in the hidden index
``.minicluster-render``, which kubectl ignores), never a file of the user's. A Secret's file is
readable by its owner only, and so is a file that holds a secret output.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from flux_minicluster.core import certificate
from flux_minicluster.core.errors import Problem, SpecError
from flux_minicluster.core.render.manifests import to_yaml

__all__ = [
    "INDEX",
    "MASK",
    "PATCHES",
    "load_or_create_certificate",
    "write_folder",
    "write_outputs",
    "write_private",
]

INDEX: Final = ".minicluster-render"
PATCHES: Final = "patches"
MASK: Final = "[secret]"
PRIVATE: Final = 0o600
PUBLIC: Final = 0o644


def write_folder(
    folder: Path, objects: list[dict[str, Any]], patches: Iterable[dict[str, Any]] = ()
) -> list[Path]:
    """Write ``objects`` (and ``patches``) into ``folder``, replacing the previous render's files.

    Returns the paths written, in order.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise SpecError(Problem("", f"cannot create {folder}: {err.strerror}")) from None
    _remove_previous(folder)
    written = _write_numbered(folder, objects)
    patches = list(patches)
    if patches:
        written += _write_numbered(folder / PATCHES, patches)
    index = [str(p.relative_to(folder)) for p in written]
    write_private(folder / INDEX, "".join(f"{line}\n" for line in index), PUBLIC)
    return written


def _write_numbered(folder: Path, objects: list[dict[str, Any]]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    width = max(2, len(str(len(objects))))
    written = []
    for number, manifest in enumerate(objects, start=1):
        kind = str(manifest["kind"]).lower()
        name = str(manifest["metadata"]["name"])
        path = folder / f"{number:0{width}d}-{kind}-{name}.yaml"
        # A Secret's file holds the certificate's secret key: readable by its owner only.
        write_private(
            path, to_yaml([manifest]), PRIVATE if manifest["kind"] == "Secret" else PUBLIC
        )
        written.append(path)
    return written


def _remove_previous(folder: Path) -> None:
    index = folder / INDEX
    if not index.is_file():
        return
    for line in index.read_text().splitlines():
        path = (folder / line).resolve()
        # Only files the index names, inside this folder: never a user's file, never elsewhere.
        if line and folder.resolve() in path.parents and path.is_file():
            path.unlink()
    patches = folder / PATCHES
    if patches.is_dir() and not any(patches.iterdir()):
        patches.rmdir()


def write_outputs(
    path: Path,
    stack: str,
    outputs: Mapping[str, Any],
    secret_names: Iterable[str],
    *,
    show_secrets: bool = False,
) -> None:
    """A stack's outputs as JSON, each secret output masked unless ``show_secrets``."""
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
    write_private(path, json.dumps(payload, indent=2, sort_keys=True) + "\n", mode)


def load_or_create_certificate(path: Path, name: str, hostname: str) -> tuple[str, bool]:
    """The certificate in ``path``, or a new one written there (0600) when it does not exist.

    Returns the text and whether it was created. The same file gives the same Secret and pod
    template on every render, so a rendered cluster can be applied again (GitOps).
    """
    if path.exists():
        try:
            text = path.read_text()
        except OSError as err:
            raise SpecError(Problem("", f"cannot read: {err.strerror}"), source=str(path)) from None
        except UnicodeDecodeError:
            raise SpecError(
                Problem("", "not a CURVE certificate: not UTF-8 text (flux keygen writes text)"),
                source=str(path),
            ) from None
        try:
            certificate.parse(text)
        except certificate.CertificateError as err:
            raise SpecError(Problem("", str(err)), source=str(path)) from None
        return text, False
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
    try:
        certificate.write(cert, path)
    except OSError as err:
        raise SpecError(Problem("", f"cannot write: {err.strerror}"), source=str(path)) from None
    return certificate.render(cert), True


def created_certificate_warning(path: Path) -> str:
    """What stderr says when ``--curve-cert FILE`` did not exist and a new certificate is there."""
    return (
        f"WARNING: {path} did not exist: created a NEW CURVE certificate there (mode 0600). If you "
        "meant an existing certificate, the path is wrong: a new certificate changes the curve "
        "Secret and replaces the Job"
    )


def write_private(path: Path, text: str, mode: int) -> None:
    """Write ``text`` to ``path`` with exactly ``mode`` (an existing file keeps no old mode)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(text)
    except OSError as err:
        raise SpecError(Problem("", f"cannot write {path}: {err.strerror}")) from None
