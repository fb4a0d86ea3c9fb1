"""Pod volumes and volume mounts: the MiniCluster's own, and the user's ``containers[].volumes``.

The operator's volume code has four quirks that break real specs, fixed here:

* a configMap volume is named after ``configMapName`` while its mount is named after the map key,
  so the pod is refused unless the two happen to be equal: here the volume is named by the key;
* a path-only volume becomes a PVC with an empty ``claimName``, which the API server refuses:
  here it is an emptyDir at that path (scratch space, which is what such specs mean);
* an emptyDir is always mounted at ``/dev/shm``, ignoring ``path``: here ``path`` wins and
  ``/dev/shm`` is the default;
* mounts leak into every later container (a slice shared between loop iterations): here each
  container mounts exactly its own volumes.

Each pod volume is defined once, by the first container that declares it (validation refuses
two different definitions under one name), so two containers may share a volume.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from flux_minicluster.core.base import layout
from flux_minicluster.core.planning.plan import MiniClusterPlan
from flux_minicluster.core.render import kube
from flux_minicluster.core.spec.models import (
    DEFAULT_LOGS_DIR,
    Container,
    ContainerVolume,
    QuantityValue,
)

__all__ = [
    "SHM_PATH",
    "container_mounts",
    "entrypoint_volume",
    "flux_mounts",
    "init_mounts",
    "memory_at_shm",
    "output_mount_path",
    "system_volumes",
    "user_mounts",
    "user_volumes",
]

SHM_PATH: Final = "/dev/shm"
SCRIPT_MODE: Final = 0o755
FILE_MODE: Final = 0o644
# The Secret's file is owned by root: 0444 lets a container running as any uid read it. Only
# this pod's containers that mount it can, and the entrypoint copies it to a 0600 file owned by
# the broker's user, which is the file Flux reads (it refuses a group/other-readable cert).
CURVE_MODE: Final = 0o444
# Credentials and the munge key: read by the entrypoint, which runs as root in the v1alpha1
# images that use them (multi-user mode needs root to create users and start munged).
CREDENTIALS_MODE: Final = 0o400


def _empty_dir(
    medium: str | None = None, size_limit: QuantityValue | None = None
) -> dict[str, Any]:
    source: dict[str, Any] = {}
    if medium is not None and medium.lower() == "memory":
        source["medium"] = "Memory"
    if size_limit is not None:
        source["sizeLimit"] = kube.quantity(size_limit)
    return source


def _items(items: dict[str, str]) -> list[dict[str, str]]:
    return [{"key": key, "path": path} for key, path in items.items()]


def volume_source(volume: ContainerVolume) -> dict[str, Any]:
    """The pod volume source for one spec volume, chosen by ``ContainerVolume.kind``."""
    kind = volume.kind
    if kind == "csi":
        csi: dict[str, Any] = {"driver": volume.csi_driver}
        if volume.read_only:
            csi["readOnly"] = True
        if volume.csi_driver_attributes:
            csi["volumeAttributes"] = dict(volume.csi_driver_attributes)
        return {"csi": csi}
    if kind == "secret":
        secret: dict[str, Any] = {"secretName": volume.secret_name}
        if volume.items:
            secret["items"] = _items(volume.items)
        return {"secret": secret}
    if kind == "emptyDir":
        return {"emptyDir": _empty_dir(volume.empty_dir_medium, volume.empty_dir_size_limit)}
    if kind == "hostPath":
        # Directory: the directory must already exist on the node, as with the operator.
        return {"hostPath": {"path": volume.host_path, "type": "Directory"}}
    if kind == "configMap":
        config_map: dict[str, Any] = {"name": volume.config_map_name}
        if volume.items:
            config_map["items"] = _items(volume.items)
        return {"configMap": config_map}
    if kind == "persistentVolumeClaim":
        claim: dict[str, Any] = {"claimName": volume.claim_name}
        if volume.read_only:
            claim["readOnly"] = True
        return {"persistentVolumeClaim": claim}
    return {"emptyDir": {}}  # "scratch": a path-only volume


def _mount(name: str, path: str, read_only: bool = False) -> dict[str, Any]:
    mount: dict[str, Any] = {"name": name, "mountPath": path}
    if read_only:
        mount["readOnly"] = True
    return mount


def user_mounts(container: Container) -> list[dict[str, Any]]:
    """The mounts of exactly this container's own volumes, in spec order."""
    mounts = []
    for name, volume in container.volumes.items():
        # Validation requires a path for every kind but emptyDir, which defaults to /dev/shm.
        default = SHM_PATH if volume.kind == "emptyDir" else ""
        path = volume.path or default
        mounts.append(_mount(name, path, volume.read_only))
    return mounts


def memory_at_shm(container: Container) -> bool:
    """Whether ``container`` mounts a memory-backed emptyDir at /dev/shm: room in memory the user
    sized for shared memory (the container runtime's own /dev/shm is 64 MiB), where MPI's
    shared-memory files may then go instead of the job's directory on disk."""
    return any(
        volume.kind == "emptyDir"
        and _empty_dir(volume.empty_dir_medium).get("medium") == "Memory"
        and (volume.path or SHM_PATH).rstrip("/") == SHM_PATH
        for volume in container.volumes.values()
    )


def user_volumes(containers: Iterable[Container]) -> list[dict[str, Any]]:
    """One pod volume per volume name across ``containers``; the first definition wins."""
    seen: dict[str, dict[str, Any]] = {}
    for container in containers:
        for name, volume in container.volumes.items():
            if name not in seen:
                seen[name] = {"name": name, **volume_source(volume)}
    return list(seen.values())


def output_mount_path(plan: MiniClusterPlan) -> str | None:
    """Where the Flux container's output emptyDir is mounted, if anywhere.

    The entrypoint makes ``FLUX_OUTPUT_DIR`` (``logs``, by default ``/tmp/fluxout``, the
    operator's path) and batch jobs write there. On the image's root filesystem that would keep
    a spec from making it read-only (``securityContext.readOnlyRootFilesystem``), so the default
    directory is an emptyDir of its own (it also survives a container restart). Not when the
    spec names its own ``logs`` or mounts a volume of its own at or above the default: the
    output then goes where the spec put it, as before. Nor when the flux view is mounted on,
    above or inside it: two mounts at one path are refused by the API server, and one over the
    other would hide the view's ``flux`` from the broker (paths compared as the runtime sees
    them, ``//tmp`` being ``/tmp``).
    """
    flux = plan.spec.containers[plan.flux_index]
    if flux.logs is not None:
        return None
    view = plan.spec.flux.container.mount_path
    if layout.mounted_under(view, DEFAULT_LOGS_DIR) or layout.mounted_under(DEFAULT_LOGS_DIR, view):
        return None
    if any(layout.mounted_under(DEFAULT_LOGS_DIR, m["mountPath"]) for m in user_mounts(flux)):
        return None
    return DEFAULT_LOGS_DIR


def entrypoint_volume(plan: MiniClusterPlan, keys: Iterable[str]) -> dict[str, Any]:
    """The entrypoint ConfigMap as a volume, one item per data key; scripts are executable.

    Listing the items makes the kubelet refuse to start a pod whose ConfigMap lacks a script the
    pod needs, instead of starting a broker that then fails on a missing file.
    """
    items: list[dict[str, Any]] = []
    for key in keys:
        item: dict[str, Any] = {"key": key, "path": key}
        if key.endswith(".sh"):
            item["mode"] = SCRIPT_MODE
        items.append(item)
    return {
        "name": plan.names.entrypoint,
        "configMap": {"name": plan.names.entrypoint, "defaultMode": FILE_MODE, "items": items},
    }


def system_volumes(plan: MiniClusterPlan, entrypoint_keys: Iterable[str]) -> list[dict[str, Any]]:
    """The MiniCluster's own volumes, in the operator's order, then the curve Secret (v1alpha1's
    ``curveCertSecret`` instead when the spec names one), the credentials and the munge key."""
    user_secret = plan.spec.flux.curve_cert_secret
    curve_secret, curve_key = (
        (user_secret, layout.V1ALPHA1_CURVE_KEY)
        if user_secret is not None
        else (plan.names.curve_secret, layout.CURVE_FILE)
    )
    out: list[dict[str, Any]] = [
        {"name": layout.SOFTWARE_VOLUME, "emptyDir": {}},
        {"name": layout.HOME_VOLUME, "emptyDir": {}},
        {"name": plan.spec.flux.container.name, "emptyDir": {}},
        entrypoint_volume(plan, entrypoint_keys),
        {
            "name": layout.CURVE_VOLUME,
            "secret": {
                "secretName": curve_secret,
                "defaultMode": CURVE_MODE,
                "items": [{"key": curve_key, "path": layout.CURVE_FILE}],
            },
        },
    ]
    if output_mount_path(plan) is not None:
        out.append({"name": layout.OUTPUT_VOLUME, "emptyDir": {}})
    if sources := _credential_sources(plan):
        out.append(
            {
                "name": layout.CREDENTIALS_VOLUME,
                "projected": {"defaultMode": CREDENTIALS_MODE, "sources": sources},
            }
        )
    if plan.munge_secret is not None:
        out.append(
            {
                "name": layout.MUNGE_VOLUME,
                "secret": {
                    "secretName": plan.munge_secret,
                    "defaultMode": CREDENTIALS_MODE,
                    "items": [{"key": layout.MUNGE_KEY, "path": layout.MUNGE_KEY}],
                },
            }
        )
    return out


def _credential_sources(plan: MiniClusterPlan) -> list[dict[str, Any]]:
    """The RESTful and users Secrets, projected into one read-only folder (one file per key)."""
    sources = []
    if plan.restful is not None:
        sources.append({"secret": {"name": plan.names.restful_secret}})
    if plan.multi_user is not None:
        sources.append({"secret": {"name": plan.names.users_secret}})
    return sources


def _base_mounts(plan: MiniClusterPlan) -> list[dict[str, Any]]:
    """What the init container and every Job container mount: home, the view emptyDir, the
    scripts (read-only)."""
    return [
        _mount(layout.HOME_VOLUME, layout.HOME_DIR),
        _mount(plan.spec.flux.container.name, plan.spec.flux.container.mount_path),
        _mount(plan.names.entrypoint, layout.ENTRYPOINT_DIR, read_only=True),
    ]


def init_mounts(plan: MiniClusterPlan) -> list[dict[str, Any]]:
    """The flux view init container: the base mounts, and the spack software emptyDir at
    ``<mountPath>/software``, inside the view's.

    The operator's init container copies the software into the view emptyDir, and its Flux
    container copies it again into the software emptyDir at ``/opt/software``, where the view's
    RPATHs point: two copies of the Flux tree per pod on the node's disk before a broker starts
    (a few minutes and gigabytes at a hundred pods a node). Here the init container's one copy
    lands in the software emptyDir itself, which the Job containers mount at ``/opt/software``.
    """
    mounts = _base_mounts(plan)
    mounts.insert(2, _mount(layout.SOFTWARE_VOLUME, plan.paths.software))
    return mounts


def flux_mounts(
    plan: MiniClusterPlan, *, curve: bool, credentials: bool = False
) -> list[dict[str, Any]]:
    """What every Job container mounts; ``curve`` for the containers that reach the broker;
    ``credentials`` for the one that starts it (``wait.sh`` reads the passwords, the RESTful
    token and the munge key, when the MiniCluster has them; nothing else does)."""
    mounts = _base_mounts(plan)
    if curve:
        mounts.append(_mount(layout.CURVE_VOLUME, layout.CURVE_DIR, read_only=True))
    mounts.append(_mount(layout.SOFTWARE_VOLUME, layout.SOFTWARE_DIR))
    if credentials and _credential_sources(plan):
        mounts.append(_mount(layout.CREDENTIALS_VOLUME, layout.CREDENTIALS_DIR, read_only=True))
    if credentials and plan.munge_secret is not None:
        mounts.append(_mount(layout.MUNGE_VOLUME, layout.MUNGE_DIR, read_only=True))
    return mounts


def container_mounts(plan: MiniClusterPlan, container: Container) -> list[dict[str, Any]]:
    """A Job container's mounts: the MiniCluster's own, then its own volumes only.

    The Flux container and wrapped sidecars (whose ``start-<i>.sh`` connects to the broker)
    mount the certificate; a sidecar that keeps its image's entrypoint does not need it. Only
    the Flux container, which starts the broker, mounts the credentials and the munge key.
    """
    curve = container.run_flux or container.wrapped
    mounts = flux_mounts(plan, curve=curve, credentials=container.run_flux)
    if container.run_flux and (output := output_mount_path(plan)) is not None:
        mounts.append(_mount(layout.OUTPUT_VOLUME, output))
    return mounts + user_mounts(container)
