"""What only the API server's validation code enforces on one object, written by hand.

The schemas cannot express these (nor do the admission plugins on by default let them pass): name
and label syntax, enum values, Job rules, resource requests and limits, selectors and
tolerations, the stored size. ``object_errors`` runs every rule that applies to one object.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

from flux_minicluster.core.kube import names, podrules
from flux_minicluster.core.kube.limits import MAX_INDEXED_COMPLETIONS, size_problems
from flux_minicluster.core.kube.quantity import resource_problems
from flux_minicluster.kubecheck.manifest import items, mapping

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


def _labels(where: str, values: Any) -> Iterator[str]:
    for key, value in mapping(values).items():
        if msg := names.label_key(str(key)):
            yield f"{where}[{key!r}]: key {msg}"
        if not isinstance(value, str):
            yield f"{where}[{key!r}]: value must be a string, got {value!r}"
        elif msg := names.label_value(value):
            yield f"{where}[{key!r}]: value {msg}"


def _annotations(where: str, values: Any) -> Iterator[str]:
    for key, value in mapping(values).items():
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
    meta = mapping(manifest.get("metadata"))
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
        for key in mapping(manifest.get(field)):
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
            for j, item in enumerate(items(ref.get("items"))):
                item = mapping(item)
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
    limits, requests = mapping(resources.get("limits")), mapping(resources.get("requests"))
    for problem in resource_problems(limits, requests):
        yield f"{where}.{problem}"


def _selector_terms(where: str, expressions: Any, operators: tuple[str, ...]) -> Iterator[str]:
    """``matchExpressions`` of a node or label selector: keys, operators and their values."""
    for i, expression in enumerate(items(expressions)):
        expression = mapping(expression)
        at = f"{where}[{i}]"
        key = expression.get("key")
        if not isinstance(key, str) or (msg := names.label_key(key)):
            yield f"{at}.key: {msg if isinstance(key, str) else 'required'}"
        operator = expression.get("operator")
        yield from _enum(f"{at}.operator", operator, operators)
        values = items(expression.get("values"))
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
    node = mapping(affinity.get("nodeAffinity"))
    required = mapping(node.get("requiredDuringSchedulingIgnoredDuringExecution"))
    terms = [
        (
            f"{where}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
            f"nodeSelectorTerms[{i}]",
            mapping(t),
        )
        for i, t in enumerate(items(required.get("nodeSelectorTerms")))
    ]
    terms += [
        (
            f"{where}.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference",
            mapping(mapping(t).get("preference")),
        )
        for i, t in enumerate(items(node.get("preferredDuringSchedulingIgnoredDuringExecution")))
    ]
    for at, term in terms:
        yield from _selector_terms(
            f"{at}.matchExpressions", term.get("matchExpressions"), _NODE_SELECTOR_OPERATORS
        )
    for kind in ("podAffinity", "podAntiAffinity"):
        pods = mapping(affinity.get(kind))
        for mode in (
            "requiredDuringSchedulingIgnoredDuringExecution",
            "preferredDuringSchedulingIgnoredDuringExecution",
        ):
            for i, term in enumerate(items(pods.get(mode))):
                term = mapping(term)
                at = f"{where}.{kind}.{mode}[{i}]"
                if "podAffinityTerm" in term:
                    term, at = mapping(term.get("podAffinityTerm")), f"{at}.podAffinityTerm"
                topology = term.get("topologyKey")
                if not isinstance(topology, str) or (msg := names.label_key(topology)):
                    yield f"{at}.topologyKey: {msg if isinstance(topology, str) else 'required'}"
                selector = mapping(term.get("labelSelector"))
                yield from _labels(f"{at}.labelSelector.matchLabels", selector.get("matchLabels"))
                yield from _selector_terms(
                    f"{at}.labelSelector.matchExpressions",
                    selector.get("matchExpressions"),
                    _SELECTOR_OPERATORS,
                )


def _tolerations(where: str, tolerations: Any) -> Iterator[str]:
    for i, toleration in enumerate(items(tolerations)):
        toleration = mapping(toleration)
        at = f"{where}[{i}]"
        operator = toleration.get("operator", "Equal")
        yield from _enum(f"{at}.operator", operator, _TOLERATION_OPERATORS)
        yield from _enum(f"{at}.effect", toleration.get("effect"), _TAINT_EFFECTS)
        for field, msg in podrules.toleration_problems(toleration):
            yield f"{at}.{field}: {msg}"


def _containers(where: str, pod: Mapping[str, Any], volume_names: set[str]) -> Iterator[str]:
    seen_names: set[str] = set()
    for group in ("initContainers", "containers"):
        for i, container in enumerate(items(pod.get(group))):
            container = mapping(container)
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
            resources = mapping(container.get("resources"))
            yield from _resources(f"{path}.resources", resources)
            claims = [mapping(c) for c in items(resources.get("claims"))]
            pod_claims = [mapping(c).get("name") for c in items(pod.get("resourceClaims"))]
            if claims and (msg := podrules.claims_problem(claims, map(str, pod_claims))):
                yield f"{path}.resources.{msg}"
            yield from _profiles(f"{path}.securityContext", container.get("securityContext"))
            for j, port in enumerate(items(container.get("ports"))):
                port = mapping(port)
                yield from _port(f"{path}.ports[{j}].containerPort", port.get("containerPort"))
                yield from _port(f"{path}.ports[{j}].hostPort", port.get("hostPort"))
                yield from _enum(f"{path}.ports[{j}].protocol", port.get("protocol"), _PROTOCOLS)
                pname = port.get("name")
                if pname is not None and (msg := names.iana_service_name(str(pname))):
                    yield f"{path}.ports[{j}].name: {msg}"
            mount_names: set[str] = set()
            mount_paths: set[str] = set()
            for j, mount in enumerate(items(container.get("volumeMounts"))):
                mount = mapping(mount)
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
    context = mapping(context)
    for field in ("seccompProfile", "appArmorProfile"):
        profile = mapping(context.get(field))
        if profile and (msg := podrules.profile_problem(profile)):
            yield f"{where}.{field}.{msg}"
    for field in ("runAsUser", "runAsGroup", "fsGroup"):
        if msg := podrules.id_problem(context.get(field)):
            yield f"{where}.{field}: {msg}"
    for i, group in enumerate(items(context.get("supplementalGroups"))):
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
    yield from _affinity(f"{where}.affinity", mapping(pod.get("affinity")))
    yield from _tolerations(f"{where}.tolerations", pod.get("tolerations"))
    yield from _profiles(f"{where}.securityContext", pod.get("securityContext"))
    if pod.get("overhead") and not pod.get("runtimeClassName"):
        yield (
            f"{where}.overhead: the RuntimeClass admission plugin refuses a pod with overhead "
            "and no runtimeClassName (set spec.pod.runtimeClassName to a RuntimeClass that "
            "defines this overhead)"
        )
    volume_names: set[str] = set()
    for i, volume in enumerate(items(pod.get("volumes"))):
        volume = mapping(volume)
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
    for i, secret in enumerate(items(pod.get("imagePullSecrets"))):
        if not mapping(secret).get("name"):
            yield f"{where}.imagePullSecrets[{i}].name: required"


def _job(manifest: Mapping[str, Any]) -> Iterator[str]:
    spec = mapping(manifest.get("spec"))
    name = str(mapping(manifest.get("metadata")).get("name", ""))
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
    template = mapping(spec.get("template"))
    yield from _labels(
        "spec.template.metadata.labels", mapping(template.get("metadata")).get("labels")
    )
    yield from _annotations(
        "spec.template.metadata.annotations", mapping(template.get("metadata")).get("annotations")
    )
    yield from _pod_spec("spec.template.spec", mapping(template.get("spec")), job=True)


def _service(manifest: Mapping[str, Any]) -> Iterator[str]:
    spec = mapping(manifest.get("spec"))
    kind = spec.get("type", "ClusterIP")
    yield from _enum("spec.type", kind, _SERVICE_TYPES)
    if spec.get("clusterIP") == "None" and kind != "ClusterIP":
        yield f"spec.clusterIP: a headless Service (None) must be of type ClusterIP, not {kind}"
    yield from _labels("spec.selector", spec.get("selector"))
    ports = items(spec.get("ports"))
    port_names: set[str] = set()
    for i, port in enumerate(ports):
        port = mapping(port)
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
    yield from _pod_spec("spec", mapping(manifest.get("spec")), job=False)


_CHECKS: Final = {"Job": _job, "Service": _service, "Pod": _pod}


def _sizes(manifest: Mapping[str, Any]) -> Iterator[str]:
    """Data, annotations and the whole object within what the API server stores (the rule
    rendering applies too, ``limits.size_problems``)."""
    for where, message in size_problems(manifest):
        yield f"{where or '<object>'}: too large: {message}"


def object_errors(manifest: Mapping[str, Any]) -> Iterator[str]:
    """Every rule of one object (each line ``path: message``), in a fixed order."""
    yield from _metadata(manifest)
    yield from _data_keys(manifest)
    yield from _sizes(manifest)
    if (check := _CHECKS.get(str(manifest.get("kind")))) is not None:
        yield from check(manifest)
