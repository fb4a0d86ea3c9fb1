"""Is this manifest something a real Kubernetes API server would accept? Checked offline.

An imitation of the API server, not a policy: no policy rule uses it. ``minicluster demo`` and the
tests check rendered objects with it, and its strict schemas come with the ``dev`` extra.

Rendered objects are checked offline in two layers (and ``make e2e`` checks the same objects
against a real API server, so that both agree):

* ``schema_errors``: the real OpenAPI schemas of a Kubernetes release (the strict variants that
  ``kubernetes-validate`` ships for 1.25 to 1.37): types, required fields, unknown fields.
* ``semantic_errors``: what only the API server's validation code (and the admission plugins on
  by default) enforces, which the schemas cannot express: name and label syntax, enum values, Job
  rules, resource requests and limits, selectors and tolerations, and the cross-object facts a
  MiniCluster depends on (the pod subdomain names a headless Service, every Service selector
  selects pods of this set, every mount names a volume).

``refusals`` asks both of a set of objects, for one or more releases: what ``minicluster demo``
and the tests check when they mean "the API server would accept these objects".

``tests/e2e/test_server_validation.py`` sends every rendered object to a real kube-apiserver with
a server-side dry run and requires the same verdict per object; it lists there, in one table, the
rules the server enforces too (kept: they work offline) and the differences that are deliberate.

``kubernetes-validate`` is a development dependency, so it is imported only when a schema is
needed; without it ``schema_errors`` says how to install it. Schemas and validators are cached per
Kubernetes version and kind: checking hundreds of manifests reads each schema once.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

from flux_minicluster.core import kubeversion, names, podrules
from flux_minicluster.core import labels as lbl
from flux_minicluster.core.limits import MAX_INDEXED_COMPLETIONS, size_problems
from flux_minicluster.core.quantity import resource_problems

__all__ = [
    "DEFAULT_VERSION",
    "available_versions",
    "refusals",
    "schema_errors",
    "semantic_errors",
]

# The release renderings target by default (its one owner: core.kubeversion).
DEFAULT_VERSION: Final = str(kubeversion.DEFAULT)


_PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
_SERVICE_TYPES: Final = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
_PROTOCOLS: Final = ("TCP", "UDP", "SCTP")
_RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
_JOB_RESTART_POLICIES: Final = ("OnFailure", "Never")
_DNS_POLICIES: Final = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
_COMPLETION_MODES: Final = ("NonIndexed", "Indexed")
_SELECTOR_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")
_NODE_SELECTOR_OPERATORS: Final = (*_SELECTOR_OPERATORS, "Gt", "Lt")
_TOLERATION_OPERATORS: Final = ("Exists", "Equal")
_TAINT_EFFECTS: Final = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")
_HOST_PATH_TYPES: Final = (
    "",
    "DirectoryOrCreate",
    "Directory",
    "FileOrCreate",
    "File",
    "Socket",
    "CharDevice",
    "BlockDevice",
)

# Labels the Job controller adds to every pod of a Job; a Service may select on them.
_JOB_NAME_LABELS: Final = ("job-name", "batch.kubernetes.io/job-name")


# --- schemas --------------------------------------------------------------------------------


def schemas_missing() -> str | None:
    """Why the strict schema check cannot run here (None when it can): its schemas and validator
    come with the ``dev`` extra, which a plain install of the package does not have."""
    import importlib.util

    missing = [m for m in ("kubernetes_validate", "jsonschema") if not importlib.util.find_spec(m)]
    if not missing:
        return None
    return (
        f"needs kubernetes-validate ({', '.join(missing)} not installed): "
        "pip install kubernetes-validate (in a checkout, `make venv` installs it)"
    )


def _schema_root() -> Any:
    try:
        import kubernetes_validate  # noqa: F401  (imported for its data files)
    except ImportError:
        raise RuntimeError(
            "kubernetes-validate is not installed; it is a development dependency: "
            "pip install -e '.[dev]' (or pip install kubernetes-validate)"
        ) from None
    from importlib.resources import files

    return files("kubernetes_validate") / "kubernetes-json-schema"


def available_versions() -> list[str]:
    """The Kubernetes minor versions with bundled schemas, oldest first (``["1.25", ...]``)."""
    found = set()
    for entry in _schema_root().iterdir():
        match = re.fullmatch(r"v(\d+)\.(\d+)\.0-local-strict", entry.name)
        if match:
            found.add((int(match[1]), int(match[2])))
    return [f"{major}.{minor}" for major, minor in sorted(found)]


@functools.cache
def _load(version: str, filename: str) -> Any:
    folder = _schema_root() / f"v{version}.0-local-strict"
    if not folder.is_dir():
        raise ValueError(
            f"no schemas for Kubernetes {version}; available: {', '.join(available_versions())}"
        )
    path = folder / filename
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


@functools.cache
def _validator(version: str, filename: str) -> Any:
    """A Draft 2020-12 validator for one kind, resolving refs into ``_definitions.json``."""
    import jsonschema
    from referencing import Registry, Resource

    schema = _load(version, filename)
    if schema is None:
        return None
    definitions = _load(version, "_definitions.json")
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _schema_file(manifest: Mapping[str, Any]) -> str:
    """``batch/v1`` + ``Job`` -> ``job-batch-v1.json``; ``v1`` + ``Pod`` -> ``pod-v1.json``."""
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", str(manifest.get("apiVersion", "")))
    return f"{str(manifest.get('kind', '')).lower()}-{api}.json"


def schema_errors(manifest: Mapping[str, Any], version: str = DEFAULT_VERSION) -> list[str]:
    """Every strict-schema error of ``manifest`` for Kubernetes ``version``, as ``path: message``.

    Unknown fields are errors (strict schemas), so a misspelt field is caught, not dropped.
    """
    if not isinstance(manifest.get("apiVersion"), str) or not isinstance(manifest.get("kind"), str):
        return ["<root>: apiVersion and kind are required strings"]
    validator = _validator(version, _schema_file(manifest))
    if validator is None:
        return [
            f"<root>: Kubernetes {version} has no schema for "
            f"{manifest['apiVersion']} {manifest['kind']}"
        ]
    errors = sorted(validator.iter_errors(manifest), key=lambda e: [str(p) for p in e.path])
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}" for e in errors]


# --- semantics ------------------------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _identity(manifest: Mapping[str, Any]) -> str:
    return f"{manifest.get('kind', '?')}/{_mapping(manifest.get('metadata')).get('name', '?')}"


def _labels(where: str, values: Any) -> Iterator[str]:
    for key, value in _mapping(values).items():
        if msg := names.label_key(str(key)):
            yield f"{where}[{key!r}]: key {msg}"
        if not isinstance(value, str):
            yield f"{where}[{key!r}]: value must be a string, got {value!r}"
        elif msg := names.label_value(value):
            yield f"{where}[{key!r}]: value {msg}"


def _annotations(where: str, values: Any) -> Iterator[str]:
    for key, value in _mapping(values).items():
        if msg := names.label_key(str(key)):
            yield f"{where}[{key!r}]: key {msg}"
        if not isinstance(value, str):
            yield f"{where}[{key!r}]: value must be a string, got {value!r}"


def _port(where: str, value: Any) -> Iterator[str]:
    if value is not None and (msg := names.port(value)):
        yield f"{where}: {msg}, got {value!r}"


def _enum(where: str, value: Any, allowed: Iterable[str]) -> Iterator[str]:
    allowed = tuple(allowed)
    if value is not None and value not in allowed:
        yield f"{where}: must be one of {', '.join(repr(a) for a in allowed)}, got {value!r}"


def _metadata(manifest: Mapping[str, Any]) -> Iterator[str]:
    meta = _mapping(manifest.get("metadata"))
    kind = manifest.get("kind")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        yield "metadata.name: required"
    else:
        check = {
            "Service": names.dns1035_label,
            "Namespace": names.dns1123_label,
        }.get(str(kind), names.dns1123_subdomain)
        if msg := check(name):
            yield f"metadata.name: {msg}"
    namespace = meta.get("namespace")
    if namespace is not None and (msg := names.dns1123_label(str(namespace))):
        yield f"metadata.namespace: {msg}"
    yield from _labels("metadata.labels", meta.get("labels"))
    yield from _annotations("metadata.annotations", meta.get("annotations"))


def _data_keys(manifest: Mapping[str, Any]) -> Iterator[str]:
    if manifest.get("kind") not in ("ConfigMap", "Secret"):
        return
    for field in ("data", "stringData", "binaryData"):
        for key in _mapping(manifest.get(field)):
            if message := names.config_key(str(key)):
                yield f"{field}[{key!r}]: {message}"


def _volume_source(where: str, volume: Mapping[str, Any]) -> Iterator[str]:  # noqa: C901
    empty_dir = volume.get("emptyDir")
    if isinstance(empty_dir, Mapping):
        medium = empty_dir.get("medium")
        if medium not in (None, "", "Memory", "HugePages") and not str(medium).startswith(
            "HugePages-"
        ):
            yield (
                f"{where}.emptyDir.medium: must be '', 'Memory' or 'HugePages[-<size>]', "
                f"got {medium!r}"
            )
    host_path = volume.get("hostPath")
    if isinstance(host_path, Mapping):
        yield from _enum(f"{where}.hostPath.type", host_path.get("type"), _HOST_PATH_TYPES)
        path = host_path.get("path")
        if not isinstance(path, str) or not path.startswith("/"):
            yield f"{where}.hostPath.path: must be an absolute path, got {path!r}"
    for source, field in (("configMap", "name"), ("secret", "secretName")):
        ref = volume.get(source)
        if isinstance(ref, Mapping):
            target = ref.get(field)
            if not isinstance(target, str) or names.dns1123_subdomain(target):
                yield f"{where}.{source}.{field}: must name a {source}, got {target!r}"
            for mode_field in ("defaultMode",):
                mode = ref.get(mode_field)
                if mode is not None and not (isinstance(mode, int) and 0 <= mode <= 0o777):
                    yield f"{where}.{source}.{mode_field}: must be between 0 and 0777, got {mode!r}"
            for j, item in enumerate(_list(ref.get("items"))):
                item = _mapping(item)
                path = item.get("path")
                if (
                    not isinstance(path, str)
                    or not path
                    or path.startswith("/")
                    or ".." in path.split("/")
                ):
                    yield (
                        f"{where}.{source}.items[{j}].path: must be a non-empty relative path "
                        f"without '..', got {path!r}"
                    )
                mode = item.get("mode")
                if mode is not None and not (isinstance(mode, int) and 0 <= mode <= 0o777):
                    yield f"{where}.{source}.items[{j}].mode: must be between 0 and 0777"
    csi = volume.get("csi")
    if isinstance(csi, Mapping):
        driver = csi.get("driver")
        if not isinstance(driver, str) or (msg := names.csi_driver(driver)):
            yield f"{where}.csi.driver: {msg if isinstance(driver, str) else 'required'}"
    claim = volume.get("persistentVolumeClaim")
    if isinstance(claim, Mapping) and not claim.get("claimName"):
        yield f"{where}.persistentVolumeClaim.claimName: required (must not be empty)"


def _resources(where: str, resources: Mapping[str, Any]) -> Iterator[str]:
    """Requests and limits: known resource names, quantities of at least 0, requests <= limits."""
    limits, requests = _mapping(resources.get("limits")), _mapping(resources.get("requests"))
    for problem in resource_problems(limits, requests):
        yield f"{where}.{problem}"


def _selector_terms(where: str, expressions: Any, operators: tuple[str, ...]) -> Iterator[str]:
    """``matchExpressions`` of a node or label selector: keys, operators and their values."""
    for i, expression in enumerate(_list(expressions)):
        expression = _mapping(expression)
        at = f"{where}[{i}]"
        key = expression.get("key")
        if not isinstance(key, str) or (msg := names.label_key(key)):
            yield f"{at}.key: {msg if isinstance(key, str) else 'required'}"
        operator = expression.get("operator")
        yield from _enum(f"{at}.operator", operator, operators)
        values = _list(expression.get("values"))
        if operator in ("Exists", "DoesNotExist") and values:
            yield f"{at}.values: must be empty with operator {operator}"
        elif operator in ("In", "NotIn"):
            if not values:
                yield f"{at}.values: required (at least one) with operator {operator}"
            for j, value in enumerate(values):
                if not isinstance(value, str) or (msg := names.label_value(value)):
                    yield f"{at}.values[{j}]: {msg if isinstance(value, str) else 'a string'}"
        elif operator in ("Gt", "Lt") and (
            len(values) != 1 or not str(values[0]).lstrip("-").isdigit()
        ):
            yield f"{at}.values: operator {operator} takes exactly one integer"


def _affinity(where: str, affinity: Mapping[str, Any]) -> Iterator[str]:
    node = _mapping(affinity.get("nodeAffinity"))
    required = _mapping(node.get("requiredDuringSchedulingIgnoredDuringExecution"))
    terms = [
        (
            f"{where}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
            f"nodeSelectorTerms[{i}]",
            _mapping(t),
        )
        for i, t in enumerate(_list(required.get("nodeSelectorTerms")))
    ]
    terms += [
        (
            f"{where}.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference",
            _mapping(_mapping(t).get("preference")),
        )
        for i, t in enumerate(_list(node.get("preferredDuringSchedulingIgnoredDuringExecution")))
    ]
    for at, term in terms:
        yield from _selector_terms(
            f"{at}.matchExpressions", term.get("matchExpressions"), _NODE_SELECTOR_OPERATORS
        )
    for kind in ("podAffinity", "podAntiAffinity"):
        pods = _mapping(affinity.get(kind))
        for mode in (
            "requiredDuringSchedulingIgnoredDuringExecution",
            "preferredDuringSchedulingIgnoredDuringExecution",
        ):
            for i, term in enumerate(_list(pods.get(mode))):
                term = _mapping(term)
                at = f"{where}.{kind}.{mode}[{i}]"
                if "podAffinityTerm" in term:
                    term, at = _mapping(term.get("podAffinityTerm")), f"{at}.podAffinityTerm"
                topology = term.get("topologyKey")
                if not isinstance(topology, str) or (msg := names.label_key(topology)):
                    yield f"{at}.topologyKey: {msg if isinstance(topology, str) else 'required'}"
                selector = _mapping(term.get("labelSelector"))
                yield from _labels(f"{at}.labelSelector.matchLabels", selector.get("matchLabels"))
                yield from _selector_terms(
                    f"{at}.labelSelector.matchExpressions",
                    selector.get("matchExpressions"),
                    _SELECTOR_OPERATORS,
                )


def _tolerations(where: str, tolerations: Any) -> Iterator[str]:
    for i, toleration in enumerate(_list(tolerations)):
        toleration = _mapping(toleration)
        at = f"{where}[{i}]"
        operator = toleration.get("operator", "Equal")
        yield from _enum(f"{at}.operator", operator, _TOLERATION_OPERATORS)
        yield from _enum(f"{at}.effect", toleration.get("effect"), _TAINT_EFFECTS)
        for field, msg in podrules.toleration_problems(toleration):
            yield f"{at}.{field}: {msg}"


def _containers(where: str, pod: Mapping[str, Any], volume_names: set[str]) -> Iterator[str]:
    seen_names: set[str] = set()
    for group in ("initContainers", "containers"):
        for i, container in enumerate(_list(pod.get(group))):
            container = _mapping(container)
            path = f"{where}.{group}[{i}]"
            cname = container.get("name")
            if not isinstance(cname, str) or (msg := names.dns1123_label(cname)):
                yield f"{path}.name: {msg if isinstance(cname, str) else 'required'}"
            elif cname in seen_names:
                yield f"{path}.name: {cname!r} is used by another container of the pod"
            else:
                seen_names.add(cname)
            yield from _enum(
                f"{path}.imagePullPolicy", container.get("imagePullPolicy"), _PULL_POLICIES
            )
            if not container.get("image"):
                yield f"{path}.image: required"
            resources = _mapping(container.get("resources"))
            yield from _resources(f"{path}.resources", resources)
            claims = [_mapping(c) for c in _list(resources.get("claims"))]
            pod_claims = [_mapping(c).get("name") for c in _list(pod.get("resourceClaims"))]
            if claims and (msg := podrules.claims_problem(claims, map(str, pod_claims))):
                yield f"{path}.resources.{msg}"
            yield from _profiles(f"{path}.securityContext", container.get("securityContext"))
            for j, port in enumerate(_list(container.get("ports"))):
                port = _mapping(port)
                yield from _port(f"{path}.ports[{j}].containerPort", port.get("containerPort"))
                yield from _port(f"{path}.ports[{j}].hostPort", port.get("hostPort"))
                yield from _enum(f"{path}.ports[{j}].protocol", port.get("protocol"), _PROTOCOLS)
                pname = port.get("name")
                if pname is not None and (msg := names.iana_service_name(str(pname))):
                    yield f"{path}.ports[{j}].name: {msg}"
            mount_names: set[str] = set()
            mount_paths: set[str] = set()
            for j, mount in enumerate(_list(container.get("volumeMounts"))):
                mount = _mapping(mount)
                mname, mpath = mount.get("name"), mount.get("mountPath")
                mwhere = f"{path}.volumeMounts[{j}]"
                if mname not in volume_names:
                    yield f"{mwhere}.name: {mname!r} is not a volume of the pod"
                if mname in mount_names:
                    yield f"{mwhere}.name: {mname!r} is mounted twice in this container"
                if not isinstance(mpath, str) or not mpath:
                    yield f"{mwhere}.mountPath: required"
                elif mpath.rstrip("/") in mount_paths:
                    yield f"{mwhere}.mountPath: {mpath!r} is used by another mount"
                else:
                    mount_paths.add(mpath.rstrip("/"))
                mount_names.add(str(mname))


def _profiles(where: str, context: Any) -> Iterator[str]:
    """The seccomp and AppArmor profiles and the user and group IDs of a pod's or a container's
    securityContext."""
    context = _mapping(context)
    for field in ("seccompProfile", "appArmorProfile"):
        profile = _mapping(context.get(field))
        if profile and (msg := podrules.profile_problem(profile)):
            yield f"{where}.{field}.{msg}"
    for field in ("runAsUser", "runAsGroup", "fsGroup"):
        if msg := podrules.id_problem(context.get(field)):
            yield f"{where}.{field}: {msg}"
    for i, group in enumerate(_list(context.get("supplementalGroups"))):
        if msg := podrules.id_problem(group):
            yield f"{where}.supplementalGroups[{i}]: {msg}"


def _pod_spec(where: str, pod: Mapping[str, Any], *, job: bool) -> Iterator[str]:
    restart = pod.get("restartPolicy")
    if job:
        if restart not in _JOB_RESTART_POLICIES:
            yield (
                f"{where}.restartPolicy: a Job's pods must have restartPolicy OnFailure or "
                f"Never, got {restart!r}"
            )
    else:
        yield from _enum(f"{where}.restartPolicy", restart, _RESTART_POLICIES)
    yield from _enum(f"{where}.dnsPolicy", pod.get("dnsPolicy"), _DNS_POLICIES)
    for field in ("hostname", "subdomain"):
        value = pod.get(field)
        if value is not None and (msg := names.dns1123_label(str(value))):
            yield f"{where}.{field}: {msg}"
    for field in ("serviceAccountName", "runtimeClassName", "priorityClassName"):
        value = pod.get(field)
        if value and (msg := names.dns1123_subdomain(str(value))):
            yield f"{where}.{field}: {msg}"
    yield from _labels(f"{where}.nodeSelector", pod.get("nodeSelector"))
    yield from _affinity(f"{where}.affinity", _mapping(pod.get("affinity")))
    yield from _tolerations(f"{where}.tolerations", pod.get("tolerations"))
    yield from _profiles(f"{where}.securityContext", pod.get("securityContext"))
    if pod.get("overhead") and not pod.get("runtimeClassName"):
        yield (
            f"{where}.overhead: the RuntimeClass admission plugin refuses a pod with overhead "
            "and no runtimeClassName (set spec.pod.runtimeClassName to a RuntimeClass that "
            "defines this overhead)"
        )
    volume_names: set[str] = set()
    for i, volume in enumerate(_list(pod.get("volumes"))):
        volume = _mapping(volume)
        vname = volume.get("name")
        vwhere = f"{where}.volumes[{i}]"
        if not isinstance(vname, str) or (msg := names.dns1123_label(vname)):
            yield f"{vwhere}.name: {msg if isinstance(vname, str) else 'required'}"
        elif vname in volume_names:
            yield f"{vwhere}.name: {vname!r} is defined twice"
        volume_names.add(str(vname))
        sources = [k for k in volume if k != "name"]
        if len(sources) != 1:
            yield f"{vwhere}: must have exactly one volume source, found {sources}"
        yield from _volume_source(vwhere, volume)
    yield from _containers(where, pod, volume_names)
    for i, secret in enumerate(_list(pod.get("imagePullSecrets"))):
        if not _mapping(secret).get("name"):
            yield f"{where}.imagePullSecrets[{i}].name: required"


def _job(manifest: Mapping[str, Any]) -> Iterator[str]:
    spec = _mapping(manifest.get("spec"))
    name = str(_mapping(manifest.get("metadata")).get("name", ""))
    mode = spec.get("completionMode", "NonIndexed")
    yield from _enum("spec.completionMode", mode, _COMPLETION_MODES)
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    if mode == "Indexed":
        if completions is None:
            yield "spec.completions: required when completionMode is Indexed"
        elif isinstance(completions, int) and completions > MAX_INDEXED_COMPLETIONS:
            yield (
                f"spec.completions: must be at most {MAX_INDEXED_COMPLETIONS} for an Indexed "
                f"Job, got {completions}"
            )
        # The pod hostname is <job>-<index>; it must stay a DNS label.
        if isinstance(completions, int) and completions > 0:
            host = f"{name}-{completions - 1}"
            if msg := names.dns1123_label(host):
                yield f"metadata.name: the pod hostname {host!r} {msg}"
    # The Job controller puts the Job name into a label value on every pod.
    if msg := names.label_value(name):
        yield f"metadata.name: becomes the pods' job-name label, which {msg}"
    for field, value in (("completions", completions), ("parallelism", parallelism)):
        if value is not None and (not isinstance(value, int) or value < 0):
            yield f"spec.{field}: must be a non-negative integer, got {value!r}"
    if isinstance(completions, int) and isinstance(parallelism, int) and parallelism > completions:
        yield f"spec.parallelism: {parallelism} is more than completions ({completions})"
    for field in ("backoffLimit", "ttlSecondsAfterFinished"):
        value = spec.get(field)
        if value is not None and (not isinstance(value, int) or value < 0):
            yield f"spec.{field}: must be a non-negative integer, got {value!r}"
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and (not isinstance(deadline, int) or deadline < 1):
        yield f"spec.activeDeadlineSeconds: must be a positive integer, got {deadline!r}"
    template = _mapping(spec.get("template"))
    yield from _labels(
        "spec.template.metadata.labels", _mapping(template.get("metadata")).get("labels")
    )
    yield from _annotations(
        "spec.template.metadata.annotations", _mapping(template.get("metadata")).get("annotations")
    )
    yield from _pod_spec("spec.template.spec", _mapping(template.get("spec")), job=True)


def _service(manifest: Mapping[str, Any]) -> Iterator[str]:
    spec = _mapping(manifest.get("spec"))
    kind = spec.get("type", "ClusterIP")
    yield from _enum("spec.type", kind, _SERVICE_TYPES)
    if spec.get("clusterIP") == "None" and kind != "ClusterIP":
        yield f"spec.clusterIP: a headless Service (None) must be of type ClusterIP, not {kind}"
    yield from _labels("spec.selector", spec.get("selector"))
    ports = _list(spec.get("ports"))
    port_names: set[str] = set()
    for i, port in enumerate(ports):
        port = _mapping(port)
        where = f"spec.ports[{i}]"
        yield from _port(f"{where}.port", port.get("port"))
        target = port.get("targetPort")
        if isinstance(target, int):
            yield from _port(f"{where}.targetPort", target)
        yield from _port(f"{where}.nodePort", port.get("nodePort"))
        if port.get("nodePort") is not None and kind not in ("NodePort", "LoadBalancer"):
            yield f"{where}.nodePort: only a NodePort or LoadBalancer Service has node ports"
        yield from _enum(f"{where}.protocol", port.get("protocol"), _PROTOCOLS)
        pname = port.get("name")
        if pname is None:
            if len(ports) > 1:
                yield f"{where}.name: required when a Service has more than one port"
        elif msg := names.dns1123_label(str(pname)):
            yield f"{where}.name: {msg}"
        elif pname in port_names:
            yield f"{where}.name: {pname!r} is used by another port"
        else:
            port_names.add(str(pname))
    headless = kind == "ClusterIP" and spec.get("clusterIP") == "None"
    if not headless and not ports and kind != "ExternalName":
        yield "spec.ports: a Service that is not headless needs at least one port"


def _pod(manifest: Mapping[str, Any]) -> Iterator[str]:
    yield from _pod_spec("spec", _mapping(manifest.get("spec")), job=False)


_CHECKS: Final = {"Job": _job, "Service": _service, "Pod": _pod}


def _pod_label_sets(manifests: list[Mapping[str, Any]]) -> list[tuple[str, dict[str, str], int]]:
    """``(namespace, labels, completions)`` for every pod the set will create.

    A Job's pods get ``job-name`` and (Indexed) the completion index from the Job controller;
    ``completions`` is how many index values exist (0 for a bare Pod, which has none).
    """
    out = []
    for m in manifests:
        meta = _mapping(m.get("metadata"))
        namespace = str(meta.get("namespace", "default"))
        if m.get("kind") == "Pod":
            out.append((namespace, dict(_mapping(meta.get("labels"))), 0))
        elif m.get("kind") == "Job":
            spec = _mapping(m.get("spec"))
            labels = dict(
                _mapping(_mapping(_mapping(spec.get("template")).get("metadata")).get("labels"))
            )
            for key in _JOB_NAME_LABELS:
                labels[key] = str(meta.get("name", ""))
            indexed = spec.get("completionMode") == "Indexed"
            completions = spec.get("completions") if indexed else 0
            out.append((namespace, labels, completions if isinstance(completions, int) else 0))
    return out


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str], completions: int) -> bool:
    for key, value in selector.items():
        if key == lbl.COMPLETION_INDEX_LABEL and completions:
            if not (isinstance(value, str) and value.isdigit() and int(value) < completions):
                return False
        elif labels.get(key) != value:
            return False
    return True


def _cross(manifests: list[Mapping[str, Any]]) -> Iterator[str]:  # noqa: C901
    """Facts between objects: unique names, subdomains, selectors, referenced ConfigMap keys."""
    seen: set[tuple[str, str, str]] = set()
    headless: set[tuple[str, str]] = set()
    maps: dict[tuple[str, str, str], set[str]] = {}
    for m in manifests:
        meta = _mapping(m.get("metadata"))
        ident = (str(m.get("kind")), str(meta.get("namespace", "default")), str(meta.get("name")))
        if ident in seen:
            yield f"{_identity(m)}: metadata.name: another {ident[0]} in {ident[1]} has this name"
        seen.add(ident)
        spec = _mapping(m.get("spec"))
        if m.get("kind") == "Service" and spec.get("clusterIP") == "None":
            headless.add((ident[1], ident[2]))
        if m.get("kind") in ("ConfigMap", "Secret"):
            keys = set(_mapping(m.get("data"))) | set(_mapping(m.get("stringData")))
            maps[ident] = keys | set(_mapping(m.get("binaryData")))
    pods = _pod_label_sets(manifests)
    for m in manifests:
        meta = _mapping(m.get("metadata"))
        namespace = str(meta.get("namespace", "default"))
        spec = _mapping(m.get("spec"))
        if m.get("kind") == "Service":
            selector = _mapping(spec.get("selector"))
            if selector and not any(
                ns == namespace and _selects(selector, labels, n) for ns, labels, n in pods
            ):
                yield (
                    f"{_identity(m)}: spec.selector: selects no pod of this set ({dict(selector)})"
                )
        pod_spec, where = None, ""
        if m.get("kind") == "Job":
            pod_spec = _mapping(_mapping(spec.get("template")).get("spec"))
            where = "spec.template.spec"
        elif m.get("kind") == "Pod":
            pod_spec, where = spec, "spec"
        if pod_spec is None:
            continue
        subdomain = pod_spec.get("subdomain")
        if subdomain is not None and (namespace, str(subdomain)) not in headless:
            yield (
                f"{_identity(m)}: {where}.subdomain: no headless Service named {subdomain!r} in "
                f"{namespace}; pod host names would not resolve"
            )
        for i, volume in enumerate(_list(pod_spec.get("volumes"))):
            volume = _mapping(volume)
            for source, kind, field in (
                ("configMap", "ConfigMap", "name"),
                ("secret", "Secret", "secretName"),
            ):
                ref = _mapping(volume.get(source))
                known = maps.get((kind, namespace, str(ref.get(field))))
                if not ref or known is None:
                    continue  # an object that exists outside this set
                for j, item in enumerate(_list(ref.get("items"))):
                    key = _mapping(item).get("key")
                    if key not in known:
                        yield (
                            f"{_identity(m)}: {where}.volumes[{i}].{source}.items[{j}].key: "
                            f"{key!r} is not a key of {kind} {ref.get(field)}"
                        )


def _sizes(manifest: Mapping[str, Any]) -> Iterator[str]:
    """Data, annotations and the whole object within what the API server stores (the rule
    rendering applies too, ``limits.size_problems``)."""
    for where, message in size_problems(manifest):
        yield f"{where or '<object>'}: too large: {message}"


def semantic_errors(manifests: Iterable[Mapping[str, Any]]) -> list[str]:
    """What the API server would refuse, or what would leave a MiniCluster unable to start.

    Each line is ``Kind/name: path: message``. The set is checked as a whole: a subdomain must
    name a headless Service in it, and a Service selector must select pods it creates (the Job
    controller's ``job-name`` and completion-index labels count as present on a Job's pods).
    """
    items = list(manifests)
    out: list[str] = []
    for m in items:
        prefix = _identity(m)
        checks = [_metadata(m), _data_keys(m), _sizes(m)]
        if (check := _CHECKS.get(str(m.get("kind")))) is not None:
            checks.append(check(m))
        out += [f"{prefix}: {line}" for lines in checks for line in lines]
    out += list(_cross(items))
    return out


def refusals(
    manifests: Iterable[Mapping[str, Any]], versions: Iterable[str] = (DEFAULT_VERSION,)
) -> list[str]:
    """Everything an API server would refuse in this set of objects; empty when it accepts them.

    Each object's strict-schema errors for every release in ``versions`` (none: the schemas are
    not checked), as ``Kind/name (k8s 1.34): path: message``, then the set's
    ``semantic_errors``.
    """
    items = list(manifests)
    out = [
        f"{_identity(m)} (k8s {version}): {error}"
        for m in items
        for version in versions
        for error in schema_errors(m, version)
    ]
    return out + semantic_errors(items)
