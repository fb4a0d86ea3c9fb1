"""Where a MiniCluster keeps what users put into its Flux instance across pods: the archive.

A Flux instance keeps its queue and its job history (every job's eventlog, exit code and output)
in its content store, which lives in rank 0's pod and goes with it: a ``pulumi up`` that replaces
the Job, a rank 0 pod deleted, evicted or drained, a ``destroy``. Flux can carry that content from
one instance to the next: rank 0's rc3 dumps it (``-Scontent.dump``) when the broker shuts down,
rank 0's rc1 restores it (``-Scontent.restore``) when a broker starts. The operator passes only the
restore and leaves the dump to a person; here both happen on every stop and start, so a
MiniCluster's archive is:

* ``spec.archive.path`` when the spec names one (the operator's field, unchanged);
* otherwise, for a cluster that serves work for as long as it lives (persistent or interactive:
  ``serves_forever``), ``DEFAULT_DIRECTORY/<name>.tgz`` on the first claim the Flux container
  mounts writable: a claim is the one volume kind that outlives a pod and follows rank 0 to
  another node (an emptyDir dies with the pod, a hostPath stays on its node);
* otherwise none, with a warning for a cluster that serves forever (``missing_archive``).

A dump is written beside the archive first (``staging``) and moved over it only once it is
whole, so a broker killed in the middle of its dump (its grace period spent) leaves the last good
archive in place. One rank 0 at a time owns the archive: rank 0's entrypoint holds a lock beside
it (``flock``, util-linux) for the life of its broker, and a new rank 0, e.g. of a replacing Job
whose predecessor still terminates beside it, waits for it (``LOCK_WAIT_SECONDS``) before it
restores.
"""

from __future__ import annotations

import posixpath
from typing import Final

from flux_minicluster.core.base.errors import Problem
from flux_minicluster.core.spec.models import Container, MiniClusterSpec

__all__ = [
    "DEFAULT_DIRECTORY",
    "GRACE_SECONDS",
    "LOCK_WAIT_SECONDS",
    "archive_path",
    "missing_archive",
    "serves_forever",
    "staging",
]

DEFAULT_DIRECTORY: Final = "flux-archives"
"""The default archive's directory on the claim (created by rank 0 when it is missing)."""

STAGING_PREFIX: Final = "partial-"

GRACE_SECONDS: Final = 120
"""The pods' terminationGracePeriodSeconds when the MiniCluster has an archive and the spec sets
none: rank 0's dump must fit inside it. Measured with this project's Flux build (see
docs/lifecycle.md, benchmarks/archive.py): a broker holding 10,000 finished jobs stops with its
dump in 5.6 s on 2 cores (about 2,000 jobs a second); Kubernetes' default of 30 s leaves little
room for a large queue with large outputs on a slow claim."""


LOCK_WAIT_SECONDS: Final = GRACE_SECONDS + 60
"""How long a new rank 0 waits for the lock its predecessor holds on the archive until every
process of that broker is gone and its dump written (a replaced Job's old pods terminate beside
the new ones): longer than that pod's grace period, after which the kubelet has killed it."""


def serves_forever(spec: MiniClusterSpec) -> bool:
    """Whether the instance has no work of its own that ends it: interactive, or no command (the
    broker stays up until ``flux shutdown``), so people submit work to it over hours or days."""
    flux = next((c for c in spec.containers if c.run_flux), None)
    return spec.interactive or (flux is not None and not (flux.command or flux.commands.script))


def _durable_mount(container: Container) -> str | None:
    """Where the first claim the container mounts writable is mounted, if it mounts one."""
    for volume in container.volumes.values():
        if volume.kind == "persistentVolumeClaim" and not volume.read_only and volume.path:
            return volume.path
    return None


def archive_path(spec: MiniClusterSpec, name: str) -> str | None:
    """The archive rank 0 restores at start and saves at every stop, or None (see the module)."""
    if spec.flux.bursting.lead_broker is not None:
        return None  # a burst's brokers join a lead elsewhere: they hold no content of their own
    if spec.archive is not None and spec.archive.path:
        return spec.archive.path
    if not serves_forever(spec):
        return None
    flux = next((c for c in spec.containers if c.run_flux), None)
    mount = _durable_mount(flux) if flux is not None else None
    if mount is None:
        return None
    return posixpath.join(mount, DEFAULT_DIRECTORY, f"{name}.tgz")


def staging(archive: str) -> str:
    """Where a dump is written before it replaces ``archive``: the same directory (so the move
    is a rename on one file system) and the same suffix (Flux picks the format from it)."""
    directory, base = posixpath.split(archive)
    return posixpath.join(directory, STAGING_PREFIX + base)


def missing_archive(spec: MiniClusterSpec, name: str) -> Problem | None:
    """The warning of a cluster that serves forever with nowhere to keep its content."""
    if not serves_forever(spec) or spec.flux.bursting.lead_broker is not None:
        return None
    if archive_path(spec, name) is not None:
        return None
    return Problem(
        "spec.archive.path",
        "unset, and the Flux container mounts no writable claim: this MiniCluster's queue and "
        "job history are lost whenever its rank 0 pod is replaced (a changed pod template, a "
        "drained node, `pulumi destroy`); mount a PersistentVolumeClaim in the Flux container "
        f"(the archive then goes to <its path>/{DEFAULT_DIRECTORY}/{name}.tgz) or set "
        "spec.archive.path on a volume that outlives the pod",
    )
