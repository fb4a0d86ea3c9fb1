"""Server-side validation, differential: ``flux_minicluster.kubecheck`` against a real
kube-apiserver, object by object.

Every object rendered from every example, every MiniCluster of the operator's test corpus
(``../shared/compat/flux-operator-tests``, skipped without it) and a few hundred generated specs
(``tests/support/strategies.py``: valid ones, and mutated ones that still validate) goes to the
API server as a server-side dry run (``POST ...?dryRun=All&fieldValidation=Strict``, what `kubectl
create --dry-run=server` sends), and to kubecheck offline (the strict 1.36 schema plus
``semantic_errors``). Both must accept, or both refuse, each object.

Then each hand-written rule of kubecheck breaks one rendered object on purpose: kubecheck must
flag it, and the server's verdict says whether the rule is one the server enforces too
(redundant with the server, kept because it works offline) or one kubecheck adds on purpose
(``STRICTER_THAN_SERVER``, each with its reason). ``DIFFERENCES`` is the one place that records
why a verdict may differ.

v1alpha1's own objects: each rule validation applies to the operator-made volumes, the users and
the RESTful server is switched off and the rendering dry-run, and the server must refuse it too.

Pod Security: the Job's pod template (as a Pod, since admission judges pods) and any bare Pod of
every example is dry-run into namespaces that enforce the ``baseline`` and ``restricted``
profiles.
"""

from __future__ import annotations

import copy
import json
import tomllib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from controlplane import ControlPlane, collection_path, object_path
from hypothesis import HealthCheck, given, settings
from support.corpus import EXAMPLES, load_one, spec_files
from support.strategies import mutated_cases, spec_cases

from flux_minicluster import kubecheck
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import load_text, parse
from flux_minicluster.core.render.manifests import lead_service, render
from flux_minicluster.core.spec.definition import MiniClusterDefinition

REPO = Path(__file__).resolve().parents[2]
RESTRICTED_EXAMPLE = "restricted.yaml"  # written to pass Pod Security's restricted level
CERT = (REPO / "tests" / "golden" / "fixed-curve.cert").read_text()
PINS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["flux-minicluster"]["toolchain"]
# kubecheck's schemas for the minor the control plane runs.
VERSION = ".".join(PINS["kubernetes"].lstrip("v").split(".")[:2])
GENERATED = 300  # valid generated specs
MUTATED = 600  # mutated specs drawn; those that still validate are rendered and compared

Manifest = dict[str, Any]

# Why kubecheck and the server may judge an object differently; the only place that says so.
DIFFERENCES = {
    "external-reference": (
        "The server's admission looks up objects outside the rendered set: a Pod whose "
        "ServiceAccount, RuntimeClass or PriorityClass does not exist is refused (a Job is "
        "accepted and its pods fail later). kubecheck checks one set offline and cannot know "
        "what the cluster holds; the harness creates the referenced objects before the dry run."
    ),
    "cross-object": (
        "kubecheck checks facts between the objects of one MiniCluster that the server never "
        "relates (a pod subdomain names a headless Service of the set, a Service selects pods "
        "of the set, a referenced ConfigMap/Secret key exists, names are unique in the set): "
        "each object is valid alone, the MiniCluster would not work. Stricter on purpose."
    ),
    "later-failure": (
        "kubecheck refuses what the server accepts but the pods could never run: a Job whose "
        "pod hostname <job>-<index> is not a DNS label. Stricter on purpose."
    ),
    "stricter-than-server": (
        "kubecheck refuses a value the server accepts but no MiniCluster should carry: see "
        "STRICTER_THAN_SERVER for each rule."
    ),
}


# --- rendering and judging -------------------------------------------------------------------


def objects_of(definition: MiniClusterDefinition) -> list[Manifest]:
    plan = plans.build(definition)
    out = render(plan, CERT).objects()
    if plan.role is plans.Role.ROOT:
        out.append(lead_service(plan))
    return out


def ident(obj: Manifest) -> str:
    return f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"


@dataclass(frozen=True)
class Verdict:
    source: str
    object: str
    kubecheck: tuple[str, ...]
    server_ok: bool
    server_message: str

    @property
    def agrees(self) -> bool:
        return self.server_ok == (not self.kubecheck)

    def describe(self) -> str:
        side = (
            "server refused, kubecheck accepted"
            if self.kubecheck == ()
            else ("kubecheck refused, server accepted")
        )
        return (
            f"{self.source}: {self.object}: {side}: server={self.server_message[:400]!r} "
            f"kubecheck={list(self.kubecheck)[:3]}"
        )


def kubecheck_errors(objs: list[Manifest]) -> dict[str, list[str]]:
    """kubecheck's errors per object (schema for the object, semantics for the set)."""
    semantic = kubecheck.semantic_errors(objs)
    out: dict[str, list[str]] = {}
    for obj in objs:
        name = ident(obj)
        mine = [e for e in semantic if e.startswith(f"{name}: ")]
        out[name] = kubecheck.schema_errors(obj, VERSION) + mine
    return out


def provide_references(cp: ControlPlane, objs: list[Manifest]) -> None:
    """The namespaces the objects live in and the objects their pods name that the set does not
    hold (the "external-reference" difference): created for real, once."""
    own_accounts = {o["metadata"]["name"] for o in objs if o.get("kind") == "ServiceAccount"}
    for obj in objs:
        namespace = obj.get("metadata", {}).get("namespace", "default")
        cp.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        pod = pod_spec(obj)
        if pod is None:
            continue
        account = pod.get("serviceAccountName")
        if (
            isinstance(account, str)
            and account not in own_accounts
            and not kubecheck_name_problem(account)
        ):
            cp.ensure(
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": account, "namespace": namespace},
                }
            )
        runtime = pod.get("runtimeClassName")
        if isinstance(runtime, str) and not kubecheck_name_problem(runtime):
            body = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "handler": "runc"}
            if pod.get("overhead"):
                body["overhead"] = {"podFixed": pod["overhead"]}
            cp.ensure({**body, "metadata": {"name": runtime}})


def kubecheck_name_problem(name: str) -> bool:
    from flux_minicluster.core.kube import names

    return names.dns1123_subdomain(name) is not None


def pod_spec(obj: Manifest) -> dict[str, Any] | None:
    if obj.get("kind") == "Pod":
        return dict(obj.get("spec") or {})
    if obj.get("kind") == "Job":
        return dict(obj.get("spec", {}).get("template", {}).get("spec") or {})
    return None


def judge(cp: ControlPlane, source: str, objs: list[Manifest]) -> list[Verdict]:
    provide_references(cp, objs)
    errors = kubecheck_errors(objs)
    out = []
    for obj in objs:
        ok, message = cp.dry_run(obj)
        out.append(Verdict(source, ident(obj), tuple(errors[ident(obj)]), ok, message))
    return out


# --- every example and compat spec -----------------------------------------------------------


@pytest.mark.parametrize("path", spec_files())
def test_every_rendered_object_is_judged_alike(
    module_control_plane: ControlPlane, path: Path
) -> None:
    verdicts = judge(module_control_plane, str(path.name), objects_of(load_one(path)))
    assert [v.describe() for v in verdicts if not v.agrees] == []
    # rendered from a valid spec: both accept every object
    assert all(v.server_ok for v in verdicts), [v.describe() for v in verdicts]


# --- generated specs: valid, and mutated ones that still validate ------------------------------

PROBE = settings(
    database=None,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


def test_generated_specs_are_judged_alike(
    module_control_plane: ControlPlane, e2e_report: Callable[[str], None]
) -> None:
    cp = module_control_plane
    verdicts: list[Verdict] = []
    counts: Counter[str] = Counter()

    @settings(PROBE, max_examples=GENERATED)
    @given(spec_cases())
    def valid(case: Any) -> None:
        counts["valid specs"] += 1
        verdicts.extend(judge(cp, f"generated {case.name}", objects_of(parse(case.doc))))

    @settings(PROBE, max_examples=MUTATED)
    @given(mutated_cases())
    def mutated(m: Any) -> None:
        try:
            found = load_text(m.text) if m.text is not None else parse(m.doc)
        except SpecError:
            counts["mutated specs refused by validation"] += 1
            return
        definition = found[0] if isinstance(found, list) else found
        counts["mutated specs that validate"] += 1
        verdicts.extend(judge(cp, "mutated", objects_of(definition)))

    valid()
    mutated()
    disagreements = [v for v in verdicts if not v.agrees]
    outcome = Counter(
        "both accept" if v.server_ok and v.agrees else "both refuse" if v.agrees else "differ"
        for v in verdicts
    )
    e2e_report(
        f"generated: {dict(counts)}; {len(verdicts)} objects: {dict(outcome)}; "
        f"server refusals: {sorted({v.server_message[:90] for v in verdicts if not v.server_ok})}"
    )
    assert counts["valid specs"] == GENERATED
    assert counts["mutated specs that validate"] > 0, "the mutated half compared nothing"
    assert [v.describe() for v in disagreements] == []


# --- each hand-written rule of kubecheck, against the server -----------------------------------

BASE = REPO / "examples" / "services-sidecar.yaml"  # a Job, a bare Pod, two Services


def _job(o: dict[str, Manifest]) -> Manifest:
    return next(v for k, v in o.items() if k.startswith("Job/"))


def _jpod(o: dict[str, Manifest]) -> dict[str, Any]:
    spec: dict[str, Any] = _job(o)["spec"]["template"]["spec"]
    return spec


def _jc(o: dict[str, Manifest]) -> dict[str, Any]:
    container: dict[str, Any] = _jpod(o)["containers"][0]
    return container


def _pod(o: dict[str, Manifest]) -> Manifest:
    return next(v for k, v in o.items() if k.startswith("Pod/"))


def _svc(o: dict[str, Manifest]) -> Manifest:
    """The Service with ports (not the headless one)."""
    return next(
        v for k, v in o.items() if k.startswith("Service/") and v["spec"].get("clusterIP") != "None"
    )


def _headless(o: dict[str, Manifest]) -> Manifest:
    return next(
        v for k, v in o.items() if k.startswith("Service/") and v["spec"].get("clusterIP") == "None"
    )


def _cm(o: dict[str, Manifest]) -> Manifest:
    return next(v for k, v in o.items() if k.startswith("ConfigMap/"))


def _secret(o: dict[str, Manifest]) -> Manifest:
    return next(v for k, v in o.items() if k.startswith("Secret/"))


def _vol(o: dict[str, Manifest], source: str) -> dict[str, Any]:
    volume: dict[str, Any] = next(v for v in _jpod(o)["volumes"] if source in v)
    return volume


def _set(
    target: Callable[[dict[str, Manifest]], Any], *path: Any
) -> Callable[[Any], Callable[[dict[str, Manifest]], Manifest]]:
    """A mutation: ``target(objs)[path...] = value``; the object judged is the one holding it."""

    def with_value(value: Any) -> Callable[[dict[str, Manifest]], Manifest]:
        def mutate(o: dict[str, Manifest]) -> Manifest:
            node = target(o)
            for key in path[:-1]:
                node = node.setdefault(key, {}) if isinstance(key, str) else node[key]
            node[path[-1]] = value
            return _OWNER.get(target, _job)(o)

        return mutate

    return with_value


def _m(fn: Callable[[dict[str, Manifest]], Any], judged: Callable[..., Manifest] = _job) -> Any:
    """A mutation written as a function; ``judged`` picks the object sent to the server."""

    def mutate(o: dict[str, Manifest]) -> Manifest:
        fn(o)
        return judged(o)

    return mutate


def _node_terms(expr: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expr]}]
            }
        }
    }


def _pod_term(term: dict[str, Any]) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _dup_container(o: dict[str, Manifest]) -> None:
    _jpod(o)["containers"].append(copy.deepcopy(_jc(o)))


def _two_ports(o: dict[str, Manifest]) -> None:
    port = dict(_svc(o)["spec"]["ports"][0])
    port.pop("name", None)
    _svc(o)["spec"]["ports"] = [port, {**port, "port": port["port"] + 1}]


def _dup_port_name(o: dict[str, Manifest]) -> None:
    port = dict(_svc(o)["spec"]["ports"][0])
    _svc(o)["spec"]["ports"] = [port, {**port, "port": port["port"] + 1}]


def _dup_volume(o: dict[str, Manifest]) -> None:
    _jpod(o)["volumes"].append(copy.deepcopy(_jpod(o)["volumes"][0]))


def _mount_twice(o: dict[str, Manifest]) -> None:
    mount = dict(_jc(o)["volumeMounts"][0])
    _jc(o)["volumeMounts"].append({**mount, "mountPath": "/elsewhere"})


def _same_mount_path(o: dict[str, Manifest]) -> None:
    mounts = _jc(o)["volumeMounts"]
    mounts[1]["mountPath"] = mounts[0]["mountPath"]


def _rename_volume(o: dict[str, Manifest]) -> None:
    volume = _jpod(o)["volumes"][0]
    for container in _jpod(o)["containers"] + _jpod(o).get("initContainers", []):
        for mount in container.get("volumeMounts", []):
            if mount["name"] == volume["name"]:
                mount["name"] = "Bad_Volume"
    volume["name"] = "Bad_Volume"


def _item(o: dict[str, Manifest], **item: Any) -> None:
    _vol(o, "configMap")["configMap"]["items"][0].update(item)


def _indexed_without_completions(o: dict[str, Manifest]) -> None:
    # (with neither completions nor parallelism the server defaults both to 1)
    _job(o)["spec"].pop("completions", None)
    # kube-apiserver 1.36 panics on an Indexed Job with a successPolicy and no completions (a nil
    # dereference in validateSuccessPolicyRule, batch/validation.go:441: the client sees the
    # connection closed, no status); without the policy it answers with its validation message.
    _job(o)["spec"].pop("successPolicy", None)


def _job_name(length: int) -> Callable[[dict[str, Manifest]], Manifest]:
    def mutate(o: dict[str, Manifest]) -> Manifest:
        _job(o)["metadata"]["name"] = "j" * length
        return _job(o)

    return mutate


def _duplicate_object(o: dict[str, Manifest]) -> Manifest:
    o["ConfigMap/copy"] = copy.deepcopy(_cm(o))
    return o["ConfigMap/copy"]


def _namespace(o: dict[str, Manifest]) -> Manifest:
    o["Namespace/x"] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Bad.NS"}}
    return o["Namespace/x"]


def _missing_key(o: dict[str, Manifest]) -> None:
    _item(o, key="no-such-key")


def _missing_secret_key(o: dict[str, Manifest]) -> None:
    _vol(o, "secret")["secret"]["items"][0]["key"] = "no-such-key"


@dataclass(frozen=True)
class Rule:
    id: str
    mutate: Callable[[dict[str, Manifest]], Manifest]
    expect: str  # a fragment of kubecheck's message


J, P, S, H, C, X = _job, _pod, _svc, _headless, _cm, _secret
# The object a mutation of a part lands in (the Job for its pod spec and first container).
_OWNER: dict[Callable[..., Any], Callable[[dict[str, Manifest]], Manifest]] = {
    _jpod: _job,
    _jc: _job,
    J: J,
    P: P,
    S: S,
    H: H,
    C: C,
    X: X,
}
RULES = [
    # metadata
    Rule("metadata.name required", _set(C, "metadata", "name")(""), "metadata.name: required"),
    Rule("Service name is a DNS-1035 label", _set(S, "metadata", "name")("9metrics"), "DNS-1035"),
    Rule("Namespace name is a DNS-1123 label", _namespace, "metadata.name"),
    Rule(
        "object name is a DNS-1123 subdomain",
        _set(C, "metadata", "name")("Bad_Name"),
        "metadata.name: ",
    ),
    Rule(
        "metadata.namespace is a DNS-1123 label",
        _set(C, "metadata", "namespace")("a.b"),
        "metadata.namespace",
    ),
    Rule("label key syntax", _set(C, "metadata", "labels", "bad key")("x"), "['bad key']: key"),
    Rule("label value syntax", _set(C, "metadata", "labels", "k")("bad value"), "['k']: value"),
    Rule("label value is a string", _set(C, "metadata", "labels", "k")(5), "must be a string"),
    Rule("annotation key syntax", _set(C, "metadata", "annotations", "bad key")("x"), "key"),
    Rule("annotation value is a string", _set(C, "metadata", "annotations", "k")(1), "string"),
    Rule("ConfigMap/Secret data key syntax", _set(C, "data", "bad key")("x"), "data['bad key']"),
    # volumes
    Rule(
        "emptyDir.medium",
        _m(lambda o: _vol(o, "emptyDir")["emptyDir"].update(medium="Disk")),
        "emptyDir.medium",
    ),
    Rule(
        "hostPath.type",
        _m(
            lambda o: _jpod(o)["volumes"][0].update(
                emptyDir=None, hostPath={"path": "/data", "type": "Dir"}
            )
        ),
        "hostPath.type",
    ),
    Rule(
        "hostPath.path is absolute",
        _m(lambda o: _jpod(o)["volumes"][0].update(emptyDir=None, hostPath={"path": "data"})),
        "hostPath.path",
    ),
    Rule(
        "configMap volume names a ConfigMap",
        _m(lambda o: _vol(o, "configMap")["configMap"].update(name="Bad_Name")),
        "configMap.name",
    ),
    Rule(
        "secret volume names a Secret",
        _m(lambda o: _vol(o, "secret")["secret"].update(secretName="Bad_Name")),
        "secret.secretName",
    ),
    Rule(
        "defaultMode within 0777",
        _m(lambda o: _vol(o, "configMap")["configMap"].update(defaultMode=1000)),
        "defaultMode",
    ),
    Rule("items path not absolute", _m(lambda o: _item(o, path="/abs")), "relative path"),
    Rule("items path without ..", _m(lambda o: _item(o, path="../x")), "relative path"),
    Rule("items path not empty", _m(lambda o: _item(o, path="")), "relative path"),
    Rule("items mode within 0777", _m(lambda o: _item(o, mode=1000)), ".mode"),
    Rule(
        "persistentVolumeClaim.claimName",
        _m(
            lambda o: _jpod(o)["volumes"][0].update(
                emptyDir=None, persistentVolumeClaim={"claimName": ""}
            )
        ),
        "claimName",
    ),
    Rule(
        "csi.driver",
        _m(lambda o: _jpod(o)["volumes"][0].update(emptyDir=None, csi={"driver": "Bad_Driver"})),
        "csi.driver",
    ),
    Rule("volume name is a DNS-1123 label", _m(_rename_volume), "volumes[0].name"),
    Rule("volume names are unique", _m(_dup_volume), "defined twice"),
    Rule(
        "one source per volume",
        _m(lambda o: _jpod(o)["volumes"][0].update(configMap={"name": "x"})),
        "exactly one volume source",
    ),
    # containers
    Rule("container name is a DNS-1123 label", _set(_jc, "name")("Bad_Name"), ".name"),
    Rule("container names are unique", _m(_dup_container), "used by another container"),
    Rule("imagePullPolicy", _set(_jc, "imagePullPolicy")("Sometimes"), "imagePullPolicy"),
    Rule("image required", _set(_jc, "image")(""), "image: required"),
    Rule(
        "container claims name a pod resourceClaim",
        _set(_jc, "resources", "claims")([{"name": "gpu"}]),
        "resources.claims: gpu must name a claim",
    ),
    Rule(
        "a Localhost seccomp profile is named",
        _set(_jc, "securityContext", "seccompProfile")({"type": "Localhost"}),
        "seccompProfile.localhostProfile: required",
    ),
    Rule(
        "a profile name only with Localhost",
        _set(_jpod, "securityContext", "appArmorProfile")(
            {"type": "RuntimeDefault", "localhostProfile": "p"}
        ),
        "appArmorProfile.localhostProfile: set only when",
    ),
    Rule("containerPort range", _set(_jc, "ports")([{"containerPort": 70000}]), "containerPort"),
    Rule(
        "hostPort range", _set(_jc, "ports")([{"containerPort": 80, "hostPort": 70000}]), "hostPort"
    ),
    Rule(
        "container port name is an IANA service name",
        _set(_jc, "ports")([{"containerPort": 80, "name": "a-very-long-name"}]),
        "IANA",
    ),
    Rule(
        "container port protocol",
        _set(_jc, "ports")([{"containerPort": 80, "protocol": "HTTP"}]),
        "protocol",
    ),
    Rule(
        "mount names a volume",
        _m(lambda o: _jc(o)["volumeMounts"][0].update(name="nope")),
        "is not a volume",
    ),
    Rule("a volume mounted once per container", _m(_mount_twice), "mounted twice"),
    Rule(
        "mountPath required",
        _m(lambda o: _jc(o)["volumeMounts"][0].update(mountPath="")),
        "mountPath: required",
    ),
    Rule("mountPath unique", _m(_same_mount_path), "used by another mount"),
    Rule("resource names", _set(_jc, "resources")({"limits": {"cp": "1"}}), "limits['cp']"),
    Rule(
        "quantities at least 0", _set(_jc, "resources")({"requests": {"cpu": "-1"}}), "at least 0"
    ),
    Rule(
        "requests at most limits",
        _set(_jc, "resources")({"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}}),
        "more than the limit",
    ),
    # pod spec
    Rule("a Job's restartPolicy", _set(_jpod, "restartPolicy")("Always"), "restartPolicy"),
    Rule(
        "a Pod's restartPolicy",
        _m(lambda o: _pod(o)["spec"].update(restartPolicy="Sometimes"), _pod),
        "restartPolicy",
    ),
    Rule("dnsPolicy", _set(_jpod, "dnsPolicy")("Bad"), "dnsPolicy"),
    Rule(
        "hostname is a DNS-1123 label",
        _m(lambda o: _pod(o)["spec"].update(hostname="Bad_Host"), _pod),
        "hostname",
    ),
    Rule("subdomain is a DNS-1123 label", _set(_jpod, "subdomain")("a.b"), "subdomain"),
    Rule(
        "overhead needs a RuntimeClass",
        _m(lambda o: _pod(o)["spec"].update(overhead={"cpu": "100m"}), _pod),
        "overhead",
    ),
    Rule("serviceAccountName", _set(_jpod, "serviceAccountName")("Bad_SA"), "serviceAccountName"),
    Rule("runtimeClassName", _set(_jpod, "runtimeClassName")("Bad_RC"), "runtimeClassName"),
    Rule("priorityClassName", _set(_jpod, "priorityClassName")("Bad_PC"), "priorityClassName"),
    Rule("nodeSelector labels", _set(_jpod, "nodeSelector")({"zone": "a b"}), "nodeSelector"),
    Rule(
        "node affinity key",
        _set(_jpod, "affinity")(_node_terms({"key": "bad key", "operator": "Exists"})),
        ".key",
    ),
    Rule(
        "node affinity operator",
        _set(_jpod, "affinity")(_node_terms({"key": "zone", "operator": "Near"})),
        ".operator",
    ),
    Rule(
        "node affinity In values",
        _set(_jpod, "affinity")(_node_terms({"key": "zone", "operator": "In", "values": ["a b"]})),
        "values[0]",
    ),
    Rule(
        "node affinity In needs values",
        _set(_jpod, "affinity")(_node_terms({"key": "zone", "operator": "In", "values": []})),
        "required (at least one)",
    ),
    Rule(
        "node affinity Exists has no values",
        _set(_jpod, "affinity")(
            _node_terms({"key": "zone", "operator": "Exists", "values": ["a"]})
        ),
        "must be empty",
    ),
    Rule(
        "node affinity Gt takes one integer",
        _set(_jpod, "affinity")(_node_terms({"key": "zone", "operator": "Gt", "values": ["a"]})),
        "exactly one integer",
    ),
    Rule(
        "pod affinity topologyKey",
        _set(_jpod, "affinity")(
            _pod_term({"topologyKey": "", "labelSelector": {"matchLabels": {"a": "b"}}})
        ),
        "topologyKey",
    ),
    Rule(
        "pod affinity selector labels",
        _set(_jpod, "affinity")(
            _pod_term({"topologyKey": "zone", "labelSelector": {"matchLabels": {"a": "b c"}}})
        ),
        "matchLabels",
    ),
    Rule(
        "toleration key",
        _set(_jpod, "tolerations")([{"key": "bad key", "operator": "Exists"}]),
        "tolerations[0].key",
    ),
    Rule(
        "toleration operator",
        _set(_jpod, "tolerations")([{"key": "a", "operator": "Is"}]),
        "tolerations[0].operator",
    ),
    Rule(
        "toleration effect",
        _set(_jpod, "tolerations")([{"key": "a", "operator": "Exists", "effect": "Never"}]),
        "tolerations[0].effect",
    ),
    Rule(
        "toleration Exists has no value",
        _set(_jpod, "tolerations")([{"key": "a", "operator": "Exists", "value": "b"}]),
        "must be empty",
    ),
    Rule(
        "toleration value syntax",
        _set(_jpod, "tolerations")([{"key": "a", "operator": "Equal", "value": "b c"}]),
        "tolerations[0].value",
    ),
    Rule(
        "toleration without key is Exists",
        _set(_jpod, "tolerations")([{"operator": "Equal", "value": "b"}]),
        "must be Exists",
    ),
    Rule(
        "tolerationSeconds only with NoExecute",
        _set(_jpod, "tolerations")(
            [{"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]
        ),
        "must be NoExecute",
    ),
    Rule(
        "runAsUser is a user ID",
        _set(_jc, "securityContext", "runAsUser")(2**32),
        "runAsUser: must be between 0 and 2147483647",
    ),
    Rule(
        "runAsGroup is a group ID",
        _set(_jc, "securityContext", "runAsGroup")(-1),
        "runAsGroup: must be between 0 and 2147483647",
    ),
    Rule(
        "fsGroup is a group ID",
        _set(_jpod, "securityContext", "fsGroup")(-1),
        "fsGroup: must be between 0 and 2147483647",
    ),
    Rule(
        "supplementalGroups are group IDs",
        _set(_jpod, "securityContext", "supplementalGroups")([5, 2**31]),
        "supplementalGroups[1]: must be between 0 and 2147483647",
    ),
    Rule(
        "imagePullSecrets name",
        _set(_jpod, "imagePullSecrets")([{"name": ""}]),
        "imagePullSecrets[0].name",
    ),
    # jobs
    Rule("completionMode", _set(J, "spec", "completionMode")("Sometimes"), "completionMode"),
    Rule("Indexed needs completions", _m(_indexed_without_completions), "completions: required"),
    Rule(
        "Indexed completions limit",
        _m(lambda o: _job(o)["spec"].update(completions=100_001, parallelism=100_001)),
        "at most",
    ),
    Rule("pod hostname <job>-<index> is a DNS label", _job_name(62), "pod hostname"),
    Rule("Job name fits the job-name label", _job_name(64), "job-name label"),
    Rule("completions not negative", _set(J, "spec", "completions")(-1), "spec.completions"),
    Rule("parallelism not negative", _set(J, "spec", "parallelism")(-1), "spec.parallelism"),
    Rule(
        "parallelism at most completions",
        _m(lambda o: _job(o)["spec"].update(parallelism=_job(o)["spec"]["completions"] + 1)),
        "more than completions",
    ),
    Rule("backoffLimit not negative", _set(J, "spec", "backoffLimit")(-1), "backoffLimit"),
    Rule(
        "ttlSecondsAfterFinished not negative",
        _set(J, "spec", "ttlSecondsAfterFinished")(-1),
        "ttlSecondsAfterFinished",
    ),
    Rule(
        "activeDeadlineSeconds positive",
        _set(J, "spec", "activeDeadlineSeconds")(0),
        "activeDeadlineSeconds",
    ),
    Rule(
        "pod template label syntax",
        _set(J, "spec", "template", "metadata", "labels", "k")("a b"),
        "spec.template.metadata.labels",
    ),
    Rule(
        "pod template annotation key",
        _set(J, "spec", "template", "metadata", "annotations", "bad key")("x"),
        "spec.template.metadata.annotations",
    ),
    # services
    Rule("Service type", _set(S, "spec", "type")("Internal"), "spec.type"),
    Rule("a headless Service is ClusterIP", _set(H, "spec", "type")("NodePort"), "headless"),
    Rule("Service selector labels", _set(S, "spec", "selector", "k")("a b"), "spec.selector"),
    Rule(
        "Service port range",
        _m(lambda o: _svc(o)["spec"]["ports"][0].update(port=70000), _svc),
        ".port",
    ),
    Rule(
        "targetPort range",
        _m(lambda o: _svc(o)["spec"]["ports"][0].update(targetPort=70000), _svc),
        ".targetPort",
    ),
    Rule(
        "nodePort range",
        _m(
            lambda o: (
                _svc(o)["spec"].update(type="NodePort"),
                _svc(o)["spec"]["ports"][0].update(nodePort=70000),
            ),
            _svc,
        ),
        ".nodePort",
    ),
    Rule(
        "nodePort only on NodePort/LoadBalancer",
        _m(lambda o: _svc(o)["spec"]["ports"][0].update(nodePort=30001), _svc),
        "only a NodePort",
    ),
    Rule(
        "Service port protocol",
        _m(lambda o: _svc(o)["spec"]["ports"][0].update(protocol="HTTP"), _svc),
        ".protocol",
    ),
    Rule("port names required with several ports", _m(_two_ports, _svc), "name: required"),
    Rule(
        "Service port name is a DNS-1123 label",
        _m(lambda o: _svc(o)["spec"]["ports"][0].update(name="Bad_Name"), _svc),
        "ports[0].name",
    ),
    Rule("port names are unique", _m(_dup_port_name, _svc), "used by another port"),
    Rule("a Service that is not headless has ports", _set(S, "spec", "ports")([]), "at least one"),
    # between objects of the set
    Rule("names unique in the set", _duplicate_object, "another ConfigMap"),
    Rule(
        "subdomain names a headless Service",
        _m(lambda o: _jpod(o).update(subdomain="other")),
        "no headless Service",
    ),
    Rule(
        "a Service selects pods of the set",
        _set(S, "spec", "selector")({"app": "nobody"}),
        "selects no pod",
    ),
    Rule("referenced ConfigMap keys exist", _m(_missing_key), "is not a key of ConfigMap"),
    Rule("referenced Secret keys exist", _m(_missing_secret_key), "is not a key of Secret"),
]

# Rules the server does not enforce, and why kubecheck keeps them (DIFFERENCES names the kind).
_LATER = "later-failure: "
STRICTER_THAN_SERVER: dict[str, str] = {
    "Service name is a DNS-1035 label": (
        "stricter-than-server: kube-apiserver 1.36 accepts a Service name that is a DNS-1123 "
        "label (RelaxedServiceNameValidation, e.g. '9metrics'); the releases before it refuse "
        "one that does not start with a letter, and kubecheck keeps the rule that works on both"
    ),
    "a volume mounted once per container": (
        "stricter-than-server: Kubernetes lets one volume be mounted at several paths; the "
        "renderer never does, and a second mount of a volume is how the operator's bug of "
        "volumes leaking into later containers shows"
    ),
    "activeDeadlineSeconds positive": _LATER + "a Job with a 0 s deadline fails at once",
    "configMap volume names a ConfigMap": _LATER + "no ConfigMap can have that name: the pods "
    "never start",
    "secret volume names a Secret": _LATER + "no Secret can have that name: the pods never start",
    "emptyDir.medium": _LATER + "the kubelet refuses an unknown medium when it mounts the volume",
    "hostPath.path is absolute": _LATER + "a relative host path names no definite directory",
    "imagePullSecrets name": (
        "stricter-than-server: the server keeps an unnamed pull secret, which names nothing"
    ),
    "node affinity Gt takes one integer": _LATER + "the scheduler cannot compare a value that "
    "is not an integer: the pods stay Pending",
    "parallelism at most completions": (
        "stricter-than-server: the Job controller caps parallelism at the remaining completions; "
        "a MiniCluster runs exactly one pod per rank (parallelism = completions = size)"
    ),
    "names unique in the set": "cross-object: a second object of a name would replace the first",
    "subdomain names a headless Service": "cross-object: the brokers' host names would not resolve",
    "a Service selects pods of the set": "cross-object: the Service would route to nothing",
    "referenced ConfigMap keys exist": "cross-object: the pods would fail to mount the key",
    "referenced Secret keys exist": "cross-object: the pods would fail to mount the key",
}


def test_each_kubecheck_rule_against_the_server(
    module_control_plane: ControlPlane, e2e_report: Callable[[str], None]
) -> None:
    cp = module_control_plane
    base = {ident(o): o for o in objects_of(load_one(BASE))}
    provide_references(cp, list(base.values()))
    results: dict[str, tuple[bool, str]] = {}
    unflagged: list[str] = []
    for rule in RULES:
        objs = copy.deepcopy(base)
        judged = rule.mutate(objs)
        for obj in objs.values():  # a volume source set to None is "not there"
            _drop_nones(obj)
        errors = kubecheck.semantic_errors(list(objs.values()))
        if not any(rule.expect in e for e in errors):
            unflagged.append(f"{rule.id}: {errors[:3]}")
        results[rule.id] = judge_for_real(cp, judged)
    assert unflagged == [], "kubecheck did not flag these mutations"
    accepted = {rule: message for rule, (ok, message) in results.items() if ok}
    redundant = [rule for rule, (ok, _) in results.items() if not ok]
    on_create = [rule for rule, (ok, message) in results.items() if "real create" in message]
    e2e_report(
        f"kubecheck has {len(RULES)} hand-written rules; the server enforces {len(redundant)} of "
        f"them too (redundant, kept: they work offline), {len(on_create)} of those only on a real "
        f"create ({', '.join(on_create)}); stricter than the server on purpose: "
        f"{len(accepted)} ({', '.join(sorted(accepted))})"
    )
    assert sorted(accepted) == sorted(STRICTER_THAN_SERVER), json.dumps(
        {rule: results[rule][1] for rule in sorted(set(accepted) ^ set(STRICTER_THAN_SERVER))},
        indent=1,
    )


def judge_for_real(cp: ControlPlane, obj: Manifest) -> tuple[bool, str]:
    """The server's verdict: a dry run, and a real create (deleted again) when the dry run
    accepts, since a dry run skips some checks (the NodePort allocator's range, for one)."""
    ok, message = cp.dry_run(obj)
    if not ok:
        return ok, message
    status, body = cp.request("POST", collection_path(obj), obj)
    if status >= 300:
        text = body.get("message", "") if isinstance(body, dict) else str(body)
        return False, f"refused on a real create only (the dry run accepted it): {text}"
    meta = obj.get("metadata", {})
    path = object_path(obj["kind"], meta["name"], meta.get("namespace"), obj["apiVersion"])
    cp.request("DELETE", path + "?propagationPolicy=Background")
    return True, ""


def _drop_nones(value: Any) -> None:
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            del value[key]
        for v in value.values():
            _drop_nones(v)
    elif isinstance(value, list):
        for v in value:
            _drop_nones(v)


# --- v1alpha1's own objects: validation's rules against the server ----------------------------

V1_APP = {"image": "ghcr.io/rse-ops/lammps:flux-sched-focal", "runFlux": True}
V1_USERS = [{"name": "ann"}]


def _v1(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "flux-framework.org/v1alpha1",
        "kind": "MiniCluster",
        "metadata": {"name": "mc", "namespace": "v1-rules"},
        "spec": {"containers": [V1_APP], **spec},
    }


# (the spec, the one problem's path or None, what the server refuses: object -> a fragment)
V1ALPHA1_RULES: list[tuple[dict[str, Any], str | None, dict[str, str]]] = [
    ({"volumes": {"Data_1": {"path": "/d"}}}, "spec.volumes.Data_1",
     {"PersistentVolume/v1-rules-mc-Data_1": "Data_1",
      "PersistentVolumeClaim/mc-Data_1": "Data_1"}),
    ({"volumes": {"d": {"path": "/d", "storageClass": "fast"}}}, "spec.volumes.d.driver",
     {"PersistentVolume/v1-rules-mc-d": "spec.csi.driver: Required value"}),
    ({"volumes": {"d": {"path": "/d", "storageClass": "fast", "driver": "Bad_Driver"}}},
     "spec.volumes.d.driver", {"PersistentVolume/v1-rules-mc-d": "Bad_Driver"}),
    ({"volumes": {"d": {"path": "/d", "labels": {"a": "b c"}}}}, "spec.volumes.d.labels.a",
     {"PersistentVolume/v1-rules-mc-d": "metadata.labels"}),
    ({"fluxRestful": {"port": 70000}}, "spec.fluxRestful.port",
     {"Service/mc-restful": "70000", "NetworkPolicy/mc-mesh": "70000"}),
    ({"users": [{"name": "bad name"}]}, "spec.users[0].name",
     {"Secret/mc-users": "password-bad name"}),
    ({"users": V1_USERS, "containers": [{**V1_APP, "existingVolumes": {"munge-key": {
      "path": "/m", "configMapName": "m"}}}]}, "spec.containers[0].existingVolumes.munge-key",
     {"Job/mc": "Duplicate value: \"munge-key\""}),
    # the control: the same objects, valid, and every one accepted
    ({"users": V1_USERS, "fluxRestful": {"port": 5000}, "volumes": {
      "d": {"path": "/d", "labels": {"a": "b"}},
      "c": {"path": "/c", "storageClass": "fast", "driver": "csi.example.com"}}}, None, {}),
]  # fmt: skip

# The rules on spec.flux that issue 37 found missing (the spec.flux of a v1alpha2 document).
FLUX_RULES: list[tuple[dict[str, Any], str | None, dict[str, str]]] = [
    # two mounts at one path; two containers of one name
    ({"container": {"mountPath": "/mnt/curve"}}, "spec.flux.container.mountPath",
     {"Job/mc": "must be unique"}),
    ({"container": {"name": "mc"}}, "spec.flux.container.name",
     {"Job/mc": 'Duplicate value: "mc"'}),
    # taken by the server: no Secret can have that name, so the pods never start (kubecheck's
    # "secret volume names a Secret", a later failure)
    ({"mungeSecret": "Not_A_Name"}, "spec.flux.mungeSecret", {}),
]  # fmt: skip


def _v2(flux: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "flux-framework.org/v1alpha2",
        "kind": "MiniCluster",
        "metadata": {"name": "mc", "namespace": "v2-rules"},
        "spec": {"containers": [V1_APP], "flux": flux},
    }


@pytest.mark.parametrize(
    ("doc", "path", "refused"),
    [(_v1(spec), path, refused) for spec, path, refused in V1ALPHA1_RULES]
    + [(_v2(flux), path, refused) for flux, path, refused in FLUX_RULES],
)
def test_validation_rules_refuse_what_the_server_refuses(
    module_control_plane: ControlPlane,
    monkeypatch: pytest.MonkeyPatch,
    doc: dict[str, Any],
    path: str | None,
    refused: dict[str, str],
) -> None:
    """Each rule validation applies to v1alpha1's volumes, users and RESTful server, and to
    spec.flux, refuses a spec whose rendering the API server refuses (with the rule off),
    naming the same value, or whose pods could never start; the control case's objects all
    pass."""
    from flux_minicluster.core.validation import crossfield

    if path is None:
        parse(doc)
    else:
        with pytest.raises(SpecError) as problems:
            parse(doc)
        assert [p.path for p in problems.value.problems] == [path]
    monkeypatch.setattr(crossfield, "check_semantics", lambda definition, **_: [])
    objs = objects_of(parse(doc))
    provide_references(module_control_plane, objs)
    verdicts = {ident(o): module_control_plane.dry_run(o) for o in objs}
    server = {name: message for name, (ok, message) in verdicts.items() if not ok}
    assert sorted(server) == sorted(refused)
    for name, fragment in refused.items():
        assert fragment in server[name], server[name]


# --- Pod Security admission ------------------------------------------------------------------


def pods_of(objs: list[Manifest], namespace: str) -> Iterator[Manifest]:
    """The Job's pod template as a Pod (admission judges pods, not Jobs), and each bare Pod."""
    for obj in objs:
        if obj["kind"] == "Job":
            template = obj["spec"]["template"]
            meta = template.get("metadata", {})
            yield {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    **meta,
                    "name": f"{obj['metadata']['name']}-0",
                    "namespace": namespace,
                },
                "spec": template["spec"],
            }
        elif obj["kind"] == "Pod":
            yield {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}


def has_host_path(objs: list[Manifest]) -> bool:
    return any("hostPath" in v for o in objs for v in (pod_spec(o) or {}).get("volumes", []))


@pytest.fixture(scope="module")
def enforcing(module_control_plane: ControlPlane) -> dict[str, str]:
    """A namespace per Pod Security level, enforcing it."""
    out = {}
    for level in ("baseline", "restricted"):
        name = f"pss-{level}"
        labels = {
            "pod-security.kubernetes.io/enforce": level,
            "pod-security.kubernetes.io/enforce-version": "latest",
        }
        module_control_plane.ensure(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
        )
        out[level] = name
    return out


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in EXAMPLES])
def test_examples_pass_pod_security_baseline(
    module_control_plane: ControlPlane,
    enforcing: dict[str, str],
    path: Path,
    e2e_report: Callable[[str], None],
) -> None:
    cp = module_control_plane
    objs = objects_of(load_one(path))
    verdicts = {}
    for level, namespace in enforcing.items():
        for pod in pods_of(objs, namespace):
            provide_references(cp, [pod])  # an autoscaled pod names its ServiceAccount
            ok, message = cp.dry_run(pod)
            verdicts[(level, pod["metadata"]["name"])] = (ok, message)
    baseline = {pod: v for (lvl, pod), v in verdicts.items() if lvl == "baseline"}
    restricted = {pod: v for (lvl, pod), v in verdicts.items() if lvl == "restricted"}
    if has_host_path(objs):
        # hostPath volumes are what baseline forbids first
        assert any(not ok and "hostPath" in msg for ok, msg in baseline.values()), baseline
        e2e_report(f"{path.name}: hostPath, refused by baseline: {_pss_reasons(baseline)}")
        return
    assert all(ok for ok, _ in baseline.values()), baseline
    if path.name == RESTRICTED_EXAMPLE:
        # The README's recipe for the restricted level: it must hold on a real API server.
        assert all(ok for ok, _ in restricted.values()), _pss_reasons(restricted)
    if all(ok for ok, _ in restricted.values()):
        e2e_report(f"{path.name}: baseline yes, restricted yes")
    else:
        e2e_report(f"{path.name}: baseline yes, restricted no: {_pss_reasons(restricted)}")


def _pss_reasons(verdicts: dict[str, tuple[bool, str]]) -> str:
    out = []
    for pod, (ok, message) in verdicts.items():
        if not ok:
            reasons = message.split('violates PodSecurity "', 1)[-1]
            out.append(f"{pod}: {reasons[:600]}")
    return "; ".join(out)
