"""Every rule a MiniCluster spec must satisfy before anything is rendered or registered.

The operator validates inside its reconciler and, on failure, logs and does nothing: the user
sees a MiniCluster that never starts. Here each rule reports a ``Problem`` with the field path in
the user's own camelCase spelling and a message that says what is allowed, and all problems of a
spec are reported at once. Rules are grouped by the part of the spec they read; each function
returns its problems and never raises.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Iterator, Sequence

from pydantic.alias_generators import to_snake

from flux_minicluster.core.base import layout
from flux_minicluster.core.base.errors import Problem, key_path
from flux_minicluster.core.flux import brokerconfig, certificate, credentials, hostlist
from flux_minicluster.core.kube import names, podrules
from flux_minicluster.core.kube.labels import NETWORK_POLICY_ANNOTATION
from flux_minicluster.core.kube.limits import (
    INT32_MAX,
    INT64_MAX,
    MAX_INDEXED_COMPLETIONS,
    MAX_LABEL_LENGTH,
)
from flux_minicluster.core.spec.definition import MiniClusterDefinition
from flux_minicluster.core.spec.models import BurstedCluster, Container, ContainerVolume
from flux_minicluster.core.validation.fielderrors import UnvalidatedField

_FSD = re.compile(r"(\d+(\.\d+)?|\.\d+)(ms|s|m|h|d)?")
_TOPOLOGY = re.compile(r"(kary:\d+|binomial|mincrit(:\d+)?|custom)")
_EMPTY_DIR_MEDIA = {"", "memory", "Memory", "default"}
_RESERVED_PATHS = (
    layout.ENTRYPOINT_DIR,
    layout.SOFTWARE_DIR,
    layout.HOME_DIR,
    layout.CURVE_DIR,
    layout.CREDENTIALS_DIR,
    layout.MUNGE_DIR,
)


def check_semantics(mc: MiniClusterDefinition, *, lenient: bool = False) -> list[Problem]:
    """All cross-field rules, in spec order; empty when the MiniCluster may be deployed.

    ``lenient``: ``mc``'s spec came from ``lenient_spec``; a group of rules stops where it
    reaches a field that did not validate and keeps what it found before (the same rules run
    in full once the types are right, so nothing is hidden from a valid spec).
    """
    groups = (
        _check_names,
        _check_sizes,
        _check_containers,
        _check_services,
        _check_volumes,
        _check_flux,
        _check_bursting,
        _check_pod,
        _check_v1alpha1,
    )
    if not lenient:
        return [problem for group in groups for problem in group(mc)]
    found: list[Problem] = []
    for group in groups:
        # pydantic warns (rather than fails) when it serializes a stand-in (model_dump)
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            try:
                for problem in group(mc):
                    found.append(problem)
            except UnvalidatedField:
                continue
            except (TypeError, ValueError, AttributeError, KeyError, IndexError, UserWarning):
                # A stand-in passed to a function that refuses its type before using it.
                continue
    return found


def _check_names(mc: MiniClusterDefinition) -> Iterator[Problem]:
    # The name also names Services (the headless one by default, <name>-lead, <name>-services).
    if msg := names.dns1035_label(mc.name):
        yield Problem("metadata.name", msg)
    else:
        what, label = max(_derived_labels(mc), key=lambda item: len(item[1]))
        if len(label) > MAX_LABEL_LENGTH:
            yield Problem(
                "metadata.name",
                f"too long: {what} {label!r} would exceed {MAX_LABEL_LENGTH} characters; use at "
                f"most {MAX_LABEL_LENGTH - (len(label) - len(mc.name))} characters",
            )
    if msg := names.dns1123_label(mc.namespace):
        yield Problem("metadata.namespace", msg)
    headless = mc.spec.network.headless_name
    if headless is not None and (msg := names.dns1035_label(headless)):
        yield Problem("spec.network.headlessName", msg)
    # The document's own labels and annotations go onto every object we render.
    for key, value in mc.labels.items():
        if msg := names.label_key(key):
            yield Problem(key_path("metadata.labels", key), f"key {msg}")
        if msg := names.label_value(value):
            yield Problem(key_path("metadata.labels", key), f"value {msg}")
    for key, value in mc.annotations.items():
        if msg := names.label_key(key):
            yield Problem(key_path("metadata.annotations", key), f"key {msg}")
        if key == NETWORK_POLICY_ANNOTATION and value not in ("true", "false"):
            yield Problem(
                key_path("metadata.annotations", key),
                f'must be "true" or "false" (leave the NetworkPolicy out), got {value!r}',
            )


def _derived_labels(mc: MiniClusterDefinition) -> Iterator[tuple[str, str]]:
    """Every name made from the MiniCluster's that Kubernetes holds to a 63-character label:
    hostnames, Service names, the pod's volume names. The longest binds (today the scripts'
    volume); the Services are listed whether or not this spec has them, so the limit on a name
    does not change with the features a spec turns on."""
    n = mc.names
    yield "the hostname", n.host(max(mc.spec.max_size - 1, 0))
    yield "the pod volume of the scripts", n.entrypoint
    yield "the Service", n.lead_service
    yield "the Service", n.restful_service
    if mc.spec.services:
        yield "the hostname", n.services_pod


def _past_indexed_limit(path: str, size: int) -> Problem | None:
    """A MiniCluster's ranks are the pods of one Indexed Job: this one's (``maxSize``) and those
    of the clusters a bursting spec names (a lead's, a bursted cluster's) alike."""
    if size <= MAX_INDEXED_COMPLETIONS:
        return None
    return Problem(
        path, f"must be at most {MAX_INDEXED_COMPLETIONS} (the Indexed Job limit), got {size}"
    )


def _check_sizes(mc: MiniClusterDefinition) -> Iterator[Problem]:
    s = mc.spec
    if s.size < 1:
        yield Problem("spec.size", f"must be at least 1, got {s.size}")
    if s.max_size < s.size:
        yield Problem("spec.maxSize", f"must be at least size ({s.size}), got {s.max_size}")
    # maxSize is size unless given: then the size is what is too large
    if problem := _past_indexed_limit(
        "spec.maxSize" if s.max_size != s.size else "spec.size", s.max_size
    ):
        yield problem
    if s.min_size < 0:
        yield Problem("spec.minSize", f"must be at least 0, got {s.min_size}")
    elif s.size >= 1 and s.min_size > s.size:  # a bad size is its own problem, not minSize's
        yield Problem("spec.minSize", f"must be at most size ({s.size}), got {s.min_size}")
    if s.tasks < 0:
        yield Problem("spec.tasks", f"must be at least 0, got {s.tasks}")
    if s.backoff_limit < 0:
        yield Problem("spec.backoffLimit", f"must be at least 0, got {s.backoff_limit}")
    elif s.backoff_limit > INT32_MAX:  # the Job's backoffLimit (or per index) is an int32
        yield Problem("spec.backoffLimit", f"must be at most {INT32_MAX}, got {s.backoff_limit}")
    if s.deadline_seconds > INT64_MAX:
        yield Problem("spec.deadlineSeconds", f"must be at most {INT64_MAX} (an int64)")
    if s.deadline_seconds < 1:
        yield Problem(
            "spec.deadlineSeconds", f"must be at least 1 second, got {s.deadline_seconds}"
        )


def _check_containers(mc: MiniClusterDefinition) -> Iterator[Problem]:  # noqa: C901
    s = mc.spec
    if not s.containers:
        yield Problem("spec.containers", "at least one container is required")
        return
    flux_indices = [i for i, c in enumerate(s.containers) if c.run_flux]
    if len(flux_indices) != 1:
        yield Problem(
            "spec.containers",
            f"exactly one container must have runFlux: true, found {len(flux_indices)}"
            + (f" (containers {flux_indices})" if flux_indices else ""),
        )
    seen: dict[str, int] = {}
    # Names the pod or the cluster's Services already use: a sidecar may not take them.
    taken = {
        mc.names.headless_service: "the headless Service",
        mc.names.services_pod: "the services Pod and its Service",
    }
    if s.flux_restful is not None:
        taken[mc.names.restful_service] = "the Flux RESTful API server's Service"
    view = s.flux.container.name
    for i, c in enumerate(s.containers):
        path = f"spec.containers[{i}]"
        cname_taken = mc.name if c.run_flux else c.name
        # The flux view init container is a container of the same pod: one name each.
        if cname_taken == view and c.run_flux:
            yield Problem(
                "spec.flux.container.name",
                f"{view!r} is already the name of the Flux container (containers[{i}], named "
                "after the MiniCluster); name the flux view init container otherwise",
            )
        elif cname_taken == view:
            yield Problem(
                f"{path}.name", f"{view!r} is already the name of the flux view init container"
            )
        elif cname_taken in taken and not (c.run_flux and cname_taken == mc.names.headless_service):
            yield Problem(
                f"{path}.name" if not c.run_flux else "metadata.name",
                f"{cname_taken!r} is already the name of {taken[cname_taken]}",
            )
        # The Flux container is always named after the MiniCluster, as the operator does.
        cname = mc.name if c.run_flux else c.name
        if not c.run_flux:
            if not c.name:
                yield Problem(f"{path}.name", "required for a container that does not run Flux")
            elif msg := names.dns1123_label(c.name):
                yield Problem(f"{path}.name", msg)
            elif c.ports and (msg := names.dns1035_label(c.name)):
                yield Problem(f"{path}.name", f"names the sidecar's Service, so it {msg}")
        if cname:
            if cname in seen:
                yield Problem(
                    f"{path}.name",
                    f"{cname!r} is already used by containers[{seen[cname]}] "
                    "(the Flux container is named after the MiniCluster)",
                )
            seen.setdefault(cname, i)
        if c.command is not None and not c.command.strip():
            yield Problem(
                f"{path}.command",
                "is empty; leave command out for a persistent cluster, or give a command",
            )
        if c.commands.script is not None and not c.commands.script.strip():
            yield Problem(f"{path}.commands.script", "is empty; leave it out or give a script")
        if c.launcher and c.batch:
            yield Problem(path, "launcher and batch cannot both be true")
        if c.batch_raw and not c.batch:
            yield Problem(f"{path}.batchRaw", "requires batch: true")
        if c.run_flux and c.commands.script and c.command:
            yield Problem(
                f"{path}.commands.script",
                "cannot be used together with command on the Flux container; "
                "the script becomes the command",
            )
        yield from _check_container_common(c, path)


def _check_container_common(c: Container, path: str) -> Iterator[Problem]:
    if msg := names.image_reference(c.image):
        yield Problem(f"{path}.image", msg)
    ports_seen: set[int] = set()
    for j, port in enumerate(c.ports):
        if msg := names.port(port):
            yield Problem(f"{path}.ports[{j}]", msg)
        elif port in ports_seen:
            yield Problem(f"{path}.ports[{j}]", f"port {port} is listed twice")
        ports_seen.add(port)
    for key in c.environment:
        if msg := names.env_var_name(key):
            yield Problem(key_path(f"{path}.environment", key), msg)
    for key, ref in c.secrets.items():
        if msg := names.env_var_name(key):
            yield Problem(key_path(f"{path}.secrets", key), msg)
        if msg := names.dns1123_subdomain(ref.name):
            yield Problem(key_path(f"{path}.secrets", key) + ".name", msg)
        if not ref.key:
            yield Problem(key_path(f"{path}.secrets", key) + ".key", "must not be empty")
    for field, value in (("workingDir", c.working_dir), ("logs", c.logs)):
        if value is not None and not value.startswith("/"):
            yield Problem(f"{path}.{field}", f"must be an absolute path, got {value!r}")
    if c.image_pull_secret is not None and (msg := names.dns1123_subdomain(c.image_pull_secret)):
        yield Problem(f"{path}.imagePullSecret", msg)


def _check_services(mc: MiniClusterDefinition) -> Iterator[Problem]:
    seen: set[str] = set()
    for i, svc in enumerate(mc.spec.services):
        path = f"spec.services[{i}]"
        if not svc.name:
            yield Problem(f"{path}.name", "required for a service container")
        elif msg := names.dns1123_label(svc.name):
            yield Problem(f"{path}.name", msg)
        elif svc.name in seen:
            yield Problem(f"{path}.name", f"{svc.name!r} is used by another service")
        else:
            seen.add(svc.name)
        for field in ("pre", "brokerPre", "workerPre"):
            if getattr(svc.commands, to_snake(field)):
                yield Problem(
                    f"{path}.commands.{field}",
                    "not allowed on a service container (services do not run Flux)",
                )
        if svc.run_flux:
            yield Problem(f"{path}.runFlux", "service containers do not run Flux")
        yield from _check_container_common(svc, path)


def _check_volumes(mc: MiniClusterDefinition) -> Iterator[Problem]:
    reserved_names = {
        mc.spec.flux.container.name,
        layout.SOFTWARE_VOLUME,
        layout.HOME_VOLUME,
        layout.CURVE_VOLUME,
        layout.CREDENTIALS_VOLUME,
        layout.MUNGE_VOLUME,
        layout.OUTPUT_VOLUME,
        mc.names.entrypoint,
        mc.names.curve_secret,
    }
    reserved_paths = (*_RESERVED_PATHS, mc.spec.flux.container.mount_path)
    for group, containers in (("containers", mc.spec.containers), ("services", mc.spec.services)):
        first: dict[str, tuple[str, ContainerVolume]] = {}
        for i, c in enumerate(containers):
            mounted: dict[str, str] = {}
            for vname, vol in c.volumes.items():
                path = key_path(f"spec.{group}[{i}].volumes", vname)
                # An emptyDir without a path is mounted at /dev/shm, as the operator does.
                at = vol.path or ("/dev/shm" if vol.empty_dir else "")
                point = layout.mount_point(at) if at.startswith("/") else at
                if at and point in mounted:
                    yield Problem(
                        f"{path}.path",
                        f"{at!r} is already the mount path of volume {mounted[point]!r} in this "
                        "container",
                    )
                elif at:
                    mounted[point] = vname
                if msg := names.dns1123_label(vname):
                    yield Problem(path, f"volume name {msg}")
                if vname in reserved_names:
                    yield Problem(path, f"volume name {vname!r} is reserved for the MiniCluster")
                if vname in first and first[vname][1].model_dump(
                    exclude={"path", "read_only"}
                ) != vol.model_dump(exclude={"path", "read_only"}):
                    yield Problem(
                        path,
                        f"defined differently in {first[vname][0]}; a volume name is one pod "
                        "volume, so use another name or the same definition",
                    )
                first.setdefault(vname, (path, vol))
                yield from _check_volume(vol, path, reserved_paths)


def _reserved_path_problem(path: str, reserved_paths: Iterable[str]) -> str | None:
    """Why a mount at ``path`` would land on one of the MiniCluster's own mounts, if it would;
    compared as the runtime mounts them (``//mnt/curve`` and ``/x/../mnt/curve`` are
    /mnt/curve), since two mounts at one place hide one of them."""
    taken = next((r for r in reserved_paths if layout.mounted_under(path, r)), None)
    if taken is None:
        return None
    point = layout.mount_point(path)
    said = f"{path!r}" + (f" (that is {point})" if point != path.rstrip("/") else "")
    where = "" if point == layout.mount_point(taken) else f"inside {taken}, "
    return f"{said} is {where}used by the MiniCluster itself; mount it elsewhere"


def _check_volume(  # noqa: C901
    vol: ContainerVolume, path: str, reserved_paths: tuple[str, ...]
) -> Iterator[Problem]:
    kind = vol.kind
    sources = [
        n
        for n, v in (
            ("csiDriver", vol.csi_driver),
            ("secretName", vol.secret_name),
            ("emptyDir", vol.empty_dir),
            ("hostPath", vol.host_path),
            ("configMapName", vol.config_map_name),
            ("claimName", vol.claim_name),
        )
        if v
    ]
    if len(sources) > 1:
        yield Problem(
            path, "set one volume source, found " + ", ".join(sources) + " (a volume has one kind)"
        )
    if kind != "emptyDir" and not vol.path:
        yield Problem(f"{path}.path", f"required for a {kind} volume: where to mount it")
    if vol.path is not None:
        if not vol.path.startswith("/"):
            yield Problem(f"{path}.path", f"must be an absolute path, got {vol.path!r}")
        elif problem := _reserved_path_problem(vol.path, reserved_paths):
            yield Problem(f"{path}.path", problem)
    if vol.host_path is not None and (
        not vol.host_path.startswith("/") or ".." in vol.host_path.split("/")
    ):
        yield Problem(
            f"{path}.hostPath", f"must be an absolute path without '..', got {vol.host_path!r}"
        )
    if vol.items and kind not in ("configMap", "secret"):
        yield Problem(f"{path}.items", "only a configMap or secret volume has items")
    for key, item_path in vol.items.items():
        if not item_path or item_path.startswith("/") or ".." in item_path.split("/"):
            yield Problem(
                key_path(f"{path}.items", key),
                f"must be a non-empty relative path without '..', got {item_path!r}",
            )
    if (vol.empty_dir_medium or vol.empty_dir_size_limit is not None) and not vol.empty_dir:
        yield Problem(path, "emptyDirMedium and emptyDirSizeLimit need emptyDir: true")
    if vol.empty_dir_medium is not None and vol.empty_dir_medium not in _EMPTY_DIR_MEDIA:
        yield Problem(
            f"{path}.emptyDirMedium",
            f"must be 'memory' or empty (the node's default medium), got {vol.empty_dir_medium!r}",
        )
    if vol.csi_driver_attributes and not vol.csi_driver:
        yield Problem(f"{path}.csiDriverAttributes", "needs csiDriver")
    if vol.csi_driver and (msg := names.csi_driver(vol.csi_driver)):
        yield Problem(f"{path}.csiDriver", msg)
    for field, value in (
        ("configMapName", vol.config_map_name),
        ("secretName", vol.secret_name),
        ("claimName", vol.claim_name),
    ):
        if value and (msg := names.dns1123_subdomain(value)):
            yield Problem(f"{path}.{field}", msg)


def _check_flux(mc: MiniClusterDefinition) -> Iterator[Problem]:  # noqa: C901
    flux = mc.spec.flux
    if msg := names.dns1123_label(flux.container.name):
        yield Problem("spec.flux.container.name", msg)
    if msg := names.image_reference(flux.container.image):
        yield Problem("spec.flux.container.image", msg)
    pull_secret = flux.container.image_pull_secret
    if pull_secret is not None and (msg := names.dns1123_subdomain(pull_secret)):
        yield Problem("spec.flux.container.imagePullSecret", msg)
    if not flux.container.mount_path.startswith("/"):
        yield Problem(
            "spec.flux.container.mountPath",
            f"must be an absolute path, got {flux.container.mount_path!r}",
        )
    elif problem := _reserved_path_problem(flux.container.mount_path, _RESERVED_PATHS):
        yield Problem("spec.flux.container.mountPath", problem)
    if flux.munge_secret is not None and (msg := names.dns1123_subdomain(flux.munge_secret)):
        yield Problem("spec.flux.mungeSecret", msg)
    if flux.connect_timeout and not _FSD.fullmatch(flux.connect_timeout):
        yield Problem(
            "spec.flux.connectTimeout",
            "must be a Flux duration such as 5s, 500ms, 2m (or empty), "
            f"got {flux.connect_timeout!r}",
        )
    if flux.topology and not _TOPOLOGY.fullmatch(flux.topology):
        yield Problem(
            "spec.flux.topology",
            f"must be kary:<N>, binomial, mincrit[:<N>] or custom, got {flux.topology!r}",
        )
    for key in flux.environment:
        # Exported by flux-view.sh, which users source in bash.
        if msg := names.shell_variable(key):
            yield Problem(key_path("spec.flux.environment", key), msg)
    if flux.curve_cert_secret is not None:
        if flux.curve_cert is not None:
            yield Problem(
                "spec.flux.curveCertSecret",
                "cannot be used together with curveCert: give the certificate (curveCert) or the "
                "Secret that holds it (curveCertSecret)",
            )
        if msg := names.dns1123_subdomain(flux.curve_cert_secret):
            yield Problem("spec.flux.curveCertSecret", msg)
    if flux.curve_cert is not None:
        try:
            certificate.parse(flux.curve_cert)
        except certificate.CertificateError as err:
            yield Problem("spec.flux.curveCert", str(err))
    if flux.broker_config is not None:
        yield from brokerconfig.check(flux.broker_config, "spec.flux.brokerConfig")


def _check_bursting(mc: MiniClusterDefinition) -> Iterator[Problem]:  # noqa: C901
    b = mc.spec.flux.bursting
    base = "spec.flux.bursting"
    if b.hostlist and b.clusters:
        yield Problem(base, "hostlist and clusters cannot both be set (a custom hostlist is final)")
    if b.hostlist:
        try:
            hosts = hostlist.expand(b.hostlist)
        except hostlist.HostlistError as err:
            yield Problem(f"{base}.hostlist", str(err))
        else:
            listed = set(hosts)
            missing = [
                h for h in (mc.names.host(i) for i in range(mc.spec.max_size)) if h not in listed
            ]
            if missing and b.lead_broker is None:
                yield Problem(
                    f"{base}.hostlist",
                    f"must list this cluster's own hosts; missing {hostlist.compress(missing)} "
                    "(a broker not in the hostlist exits at once)",
                )
    seen: set[str] = set()
    for i, cluster in enumerate(b.clusters):
        path = f"{base}.clusters[{i}]"
        cname = cluster.name or ""
        if msg := names.dns1123_label(cname):
            yield Problem(f"{path}.name", msg)
        elif cname in seen:
            yield Problem(f"{path}.name", f"{cname!r} is listed twice")
        seen.add(cname)
        if cluster.size is not None and cluster.size < 1:
            yield Problem(f"{path}.size", f"must be at least 1, got {cluster.size}")
        elif cluster.size is not None and (
            too_many := _past_indexed_limit(f"{path}.size", cluster.size)
        ):
            yield too_many
    lead = b.lead_broker
    if lead is None:
        if mc.name in seen:
            yield Problem(
                f"{base}.clusters",
                f"lists this cluster ({mc.name!r}) itself; a root lists the clusters it bursts to",
            )
        return
    if lead.address is None:
        yield Problem(
            f"{base}.leadBroker.address",
            "required: the lead broker's external address (DNS name or IPv4)",
        )
    elif msg := names.host_address(lead.address):
        yield Problem(f"{base}.leadBroker.address", msg)
    if msg := names.dns1123_label(lead.name):
        yield Problem(f"{base}.leadBroker.name", msg)
    if too_many := _past_indexed_limit(f"{base}.leadBroker.size", lead.size):
        yield too_many
    if lead.name == mc.name:
        yield Problem(
            f"{base}.leadBroker.name",
            "names this cluster itself; a bursted cluster needs its own name",
        )
    if not b.hostlist:
        problem = burst_membership_problem(mc.name, mc.spec.max_size, b.clusters)
        if problem is not None:
            yield Problem(problem[0] or f"{base}.clusters", problem[1])


def burst_membership_problem(
    name: str, max_size: int, clusters: Sequence[BurstedCluster]
) -> tuple[str, str] | None:
    """Why a bursted cluster cannot take its place in its lead's rank order, if it cannot.

    The one rule of burst membership, which the spec's validation, a burst stack (against its
    root's outputs) and the component's ``burst_group`` all apply: the lead's clusters list must
    name the burst (every broker of the group computes the ranks from that list), and the burst's
    ``maxSize`` must fit the hosts declared for it. Fewer is allowed: the declared size reserves
    ranks, and a burst that fills only some of them is like a cluster whose ``size`` is below its
    ``maxSize`` (the missing ranks stay offline); more is not, since a pod without a declared host
    has no rank. Returns ``(path, message)``, the path being ``spec.maxSize`` or empty for "the
    clusters list"; callers frame it for their input.
    """
    mine = next((c for c in clusters if c.name == name), None)
    if mine is None:
        declared = ", ".join(str(c.name) for c in clusters) or "none"
        return (
            "",
            f"must list this bursted cluster ({name!r}), as every broker computes the ranks from "
            f"the lead's list (it lists: {declared})",
        )
    if mine.size is not None and max_size > mine.size:
        return (
            "spec.maxSize",
            f"{max_size} is larger than the {mine.size} hosts the lead declares for {name!r}; a "
            "burst may fill fewer of its declared ranks, never more",
        )
    return None


def _check_pod(mc: MiniClusterDefinition) -> Iterator[Problem]:  # noqa: C901
    pod = mc.spec.pod
    for field, mapping in (
        ("spec.pod.labels", pod.labels),
        ("spec.jobLabels", mc.spec.job_labels),
        ("spec.pod.nodeSelector", pod.node_selector),
    ):
        for key, value in mapping.items():
            if msg := names.label_key(key):
                yield Problem(key_path(field, key), f"key {msg}")
            if msg := names.label_value(value):
                yield Problem(key_path(field, key), f"value {msg}")
    for key in pod.annotations:
        if msg := names.label_key(key):
            yield Problem(key_path("spec.pod.annotations", key), f"key {msg}")
    for key, values in pod.node_affinity.items():
        if msg := names.label_key(key):
            yield Problem(key_path("spec.pod.nodeAffinity", key), f"key {msg}")
        if not values:
            yield Problem(
                key_path("spec.pod.nodeAffinity", key), "needs at least one value to match"
            )
        for value in values:
            if msg := names.label_value(value):
                yield Problem(key_path("spec.pod.nodeAffinity", key), f"value {msg}")
    for i, toleration in enumerate(pod.tolerations):
        where = f"spec.pod.tolerations[{i}]"
        for field, problem in podrules.toleration_problems(toleration.model_dump(by_alias=True)):
            yield Problem(f"{where}.{field}", problem)
    if pod.resources and not pod.runtime_class_name:
        yield Problem(
            "spec.pod.resources",
            "becomes the pod overhead, which Kubernetes accepts only with "
            "spec.pod.runtimeClassName (a RuntimeClass that defines overhead)",
        )
    for class_field, class_name in (
        ("serviceAccountName", pod.service_account_name),
        ("runtimeClassName", pod.runtime_class_name),
    ):
        if class_name and (msg := names.dns1123_subdomain(class_name)):
            yield Problem(f"spec.pod.{class_field}", msg)
    if mc.spec.archive and mc.spec.archive.path and not mc.spec.archive.path.startswith("/"):
        yield Problem("spec.archive.path", "must be an absolute path")


def _check_v1alpha1(mc: MiniClusterDefinition) -> Iterator[Problem]:  # noqa: C901
    """v1alpha1's own objects: the operator-made volumes, the users and the RESTful server. The
    API server would refuse a bad name only after the objects before it were created."""
    s = mc.spec
    for key, volume in s.volumes.items():
        path = key_path("spec.volumes", key)
        if msg := names.dns1123_label(key):
            yield Problem(path, f"volume name {msg} (it names the pod volume and the claim)")
        if volume.host_path:
            if not volume.path.startswith("/") or ".." in volume.path.split("/"):
                yield Problem(
                    f"{path}.path", f"must be an absolute path without '..', got {volume.path!r}"
                )
        else:
            if msg := names.dns1123_subdomain(volume.storage_class):
                yield Problem(f"{path}.storageClass", msg)
            if volume.driver is None:
                yield Problem(
                    f"{path}.driver",
                    f"required for storageClass {volume.storage_class!r}: a CSI volume needs its "
                    "driver's name (or use storageClass: hostpath for a directory on the node)",
                )
            elif msg := names.csi_driver(volume.driver):
                yield Problem(f"{path}.driver", msg)
        if volume.secret is not None:
            if msg := names.dns1123_subdomain(volume.secret):
                yield Problem(f"{path}.secret", msg)
            if msg := names.dns1123_label(volume.secret_namespace):
                yield Problem(f"{path}.secretNamespace", msg)
        for field, mapping in (
            ("labels", volume.labels),
            ("annotations", volume.annotations),
            ("claimAnnotations", volume.claim_annotations),
        ):
            for name in mapping:
                if msg := names.label_key(name):
                    yield Problem(key_path(f"{path}.{field}", name), f"key {msg}")
            if field == "labels":
                for name, value in mapping.items():
                    if msg := names.label_value(value):
                        yield Problem(key_path(f"{path}.{field}", name), f"value {msg}")
    for i, c in enumerate(s.containers):
        # The broker's user goes into sudo's argv (${asFlux}, word-split) and into useradd.
        if c.flux_user is not None and (msg := names.user_name(c.flux_user.name)):
            yield Problem(f"spec.containers[{i}].fluxUser.name", msg)
    seen: dict[str, int] = {}
    for i, user in enumerate(s.users):
        if msg := names.user_name(user.name):
            yield Problem(f"spec.users[{i}].name", msg)
        elif user.name == "root":
            yield Problem(f"spec.users[{i}].name", "'root' exists in every image; leave it out")
        elif user.name in seen:
            first = seen[user.name]
            yield Problem(f"spec.users[{i}].name", f"{user.name!r} is also users[{first}]")
        seen.setdefault(user.name, i)
        if user.password is not None and (msg := credentials.password_problem(user.password)):
            yield Problem(f"spec.users[{i}].password", msg)
    if s.flux_restful is not None and (msg := names.port(s.flux_restful.port)):
        yield Problem("spec.fluxRestful.port", msg)
