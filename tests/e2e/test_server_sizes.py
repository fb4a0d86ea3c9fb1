"""Kubernetes' size limits, offline (``core.kube.limits.size_problems``) against a real API server.

A dry run stops before storage, so these objects are created for real (and deleted): the size
of what etcd stores is only judged on a write. Three things are compared:

* each limit at its edge: a ConfigMap's and a Secret's data, and annotations, at the limit and
  one byte over, built directly: both sides draw the line at the same byte, and the server's
  message names the field the offline rule names;
* each MiniCluster of tests/core/test_sizes.py rendered without the rule and created object by
  object: the objects the rule refuses are exactly the ones the server refuses, with the
  server's message for that limit;
* the stored size of a Job, whose edge depends on what the server adds (defaults,
  managedFields): found by bisection on one environment value, and the offline estimate must
  refuse everything the server refuses while accepting almost everything it accepts.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from controlplane import ControlPlane, collection_path, object_path
from support.sizecases import JUST_UNDER, TOO_LARGE, render_unchecked, spec

from flux_minicluster.core.kube import limits

pytestmark = pytest.mark.e2e

Manifest = dict[str, Any]
# What the server says for each limit (the fragment its message holds), by the limit the
# offline message names.
SERVER_SAYS = {
    "(1 MiB)": r"Too long: may not be more than 1048576 bytes",
    "(256 KiB)": r"Too long: may not be more than 262144 bytes",
    # etcd refuses the write; kube-apiserver 1.36 then retries a Job's create with the labels
    # its first attempt generated, and answers with their mismatch instead (a Pod or any other
    # object gets etcd's own words, as a 500).
    "(1.5 MiB)": (
        r"etcdserver: request is too large|^422 Job\.batch .* is invalid: "
        r"\[spec\.template\.metadata\.labels\[controller-uid\]: Invalid value: .*: must be '"
    ),
}


def server_says(offline_message: str) -> str:
    """The pattern of the server's message for the limit an offline message names."""
    (pattern,) = [v for k, v in SERVER_SAYS.items() if k in offline_message]
    return pattern


def create(cp: ControlPlane, obj: Manifest) -> tuple[bool, str]:
    """Create ``obj`` for real and delete it again: ``(accepted, the server's message)``."""
    status, body = cp.request("POST", collection_path(obj), obj, timeout=60)
    if status < 300:
        meta = obj["metadata"]
        path = object_path(obj["kind"], meta["name"], meta.get("namespace"), obj["apiVersion"])
        cp.request("DELETE", path + "?propagationPolicy=Background", timeout=60)
        return True, ""
    message = body.get("message", "") if isinstance(body, dict) else str(body)
    return False, f"{status} {message}"


@pytest.fixture(scope="module")
def namespace(module_control_plane: ControlPlane) -> str:
    name = "sizes"
    module_control_plane.ensure(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


def config_map(namespace: str, size: int) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "edge", "namespace": namespace},
        "data": {"a": "x" * (size - 1), "b": "y"},
    }


def secret(namespace: str, size: int) -> Manifest:
    encoded = base64.b64encode(b"x" * size).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "edge", "namespace": namespace},
        "data": {"key": encoded},
    }


def annotated(namespace: str, size: int) -> Manifest:
    key = "example.com/note"
    obj = config_map(namespace, 10)
    obj["metadata"]["annotations"] = {key: "x" * (size - len(key))}
    return obj


# (object at a size, the limit, the field offline names, the field the server names)
EDGES: dict[str, tuple[Callable[[str, int], Manifest], int, str, str]] = {
    "configmap data": (config_map, limits.MAX_DATA_BYTES, "", "[]"),
    "secret data": (secret, limits.MAX_DATA_BYTES, "data", "data"),
    "annotations": (
        annotated,
        limits.MAX_ANNOTATIONS_BYTES,
        "metadata.annotations",
        "metadata.annotations",
    ),
}


@pytest.mark.parametrize(
    ("make", "limit", "field", "server_field"), EDGES.values(), ids=list(EDGES)
)
def test_each_limit_is_drawn_at_the_same_byte(
    module_control_plane: ControlPlane,
    namespace: str,
    make: Callable[[str, int], Manifest],
    limit: int,
    field: str,
    server_field: str,
) -> None:
    at, over = make(namespace, limit), make(namespace, limit + 1)
    assert limits.size_problems(at) == []
    ((where, offline),) = limits.size_problems(over)
    assert where == field
    assert create(module_control_plane, at) == (True, "")
    accepted, message = create(module_control_plane, over)
    assert not accepted
    assert re.search(f"{re.escape(server_field)}: {server_says(offline)}", message), message


def judged(cp: ControlPlane, namespace: str, doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Each object of ``doc`` rendered without the rule: (object, the offline message or '-',
    the server's message or 'created')."""
    doc = copy.deepcopy(doc)
    doc["metadata"]["namespace"] = namespace
    out = []
    for obj in render_unchecked(doc):
        offline = limits.size_problems(obj)
        accepted, message = create(cp, obj)
        out.append(
            (
                f"{obj['kind']}/{obj['metadata']['name']}",
                offline[0][1] if offline else "-",
                "created" if accepted else message,
            )
        )
    return out


@pytest.mark.parametrize(("doc", "field", "fragment"), TOO_LARGE.values(), ids=list(TOO_LARGE))
def test_a_minicluster_too_large_is_refused_alike(
    module_control_plane: ControlPlane, namespace: str, doc: Any, field: str, fragment: str
) -> None:
    verdicts = judged(module_control_plane, namespace, doc)
    refused = [v for v in verdicts if v[1] != "-"]
    assert len(refused) == 1, verdicts
    for obj, where, server in verdicts:
        if where == "-":
            assert server == "created", (obj, server)
        else:
            assert re.search(server_says(where), server), (obj, where, server)


@pytest.mark.parametrize("doc", JUST_UNDER.values(), ids=list(JUST_UNDER))
def test_a_minicluster_just_under_is_created(
    module_control_plane: ControlPlane, namespace: str, doc: Any
) -> None:
    verdicts = judged(module_control_plane, namespace, doc)
    assert all(v[1] == "-" and v[2] == "created" for v in verdicts), verdicts


def test_the_stored_size_estimate_refuses_what_etcd_refuses(
    module_control_plane: ControlPlane, namespace: str, e2e_report: Callable[[str], None]
) -> None:
    def job(size: int) -> Manifest:
        doc = copy.deepcopy(JUST_UNDER["one environment value of 1.4 MB"])
        doc["metadata"]["namespace"] = namespace
        doc["spec"]["containers"][0]["environment"] = {"BIG": "x" * size}
        (obj,) = [o for o in render_unchecked(doc) if o["kind"] == "Job"]
        return obj

    # The largest value the server stores, by bisection (each probe a real create).
    low, high = 1_000_000, 1_600_000
    assert create(module_control_plane, job(low))[0]
    accepted, message = create(module_control_plane, job(high))
    assert not accepted
    assert re.search(SERVER_SAYS["(1.5 MiB)"], message), message
    while high - low > 256:
        middle = (low + high) // 2
        if create(module_control_plane, job(middle))[0]:
            low = middle
        else:
            high = middle
    server_edge = low
    # The offline estimate's edge, by bisection on the same objects (no server involved).
    low_offline, high_offline = 1_000_000, 1_600_000
    while high_offline - low_offline > 1:
        middle = (low_offline + high_offline) // 2
        if limits.size_problems(job(middle)):
            high_offline = middle
        else:
            low_offline = middle
    offline_edge = low_offline
    e2e_report(
        f"Job with one env value: server stores up to {server_edge} (+256) bytes, "
        f"offline accepts up to {offline_edge}; {limits.stored_bytes(job(server_edge))} "
        f"estimated for the server's largest"
    )
    assert offline_edge <= server_edge + 256, "offline accepts what the server refuses"
    assert offline_edge >= server_edge * 0.95, "offline refuses far more than the server"


# --- plain `kubectl apply`: its last-applied annotation ------------------------------------------

# Characters kubectl's JSON escapes (limits._GO_ESCAPED), so the edge holds them too.
SCRIPT_LINE = "echo '<ready>' > /dev/null 2>&1 && true \u2028 é\n"


def applied(cp: ControlPlane, obj: Manifest, *flags: str) -> tuple[bool, str]:
    """`kubectl apply [flags] -f -` of ``obj`` for real, then deleted: (applied, its stderr)."""
    text = json.dumps(obj)
    proc = cp.kubectl("apply", *flags, "-f", "-", input=text, check=False, timeout=120)
    if proc.returncode == 0:
        cp.kubectl("delete", "--wait=false", "-f", "-", input=text, check=False, timeout=60)
    return proc.returncode == 0, proc.stderr


def client_applied_at(namespace: str, size: int) -> Manifest:
    """A ConfigMap whose annotations, once plain `kubectl apply` adds its own, are ``size``
    bytes by the offline count."""
    obj = config_map(namespace, 10)
    lines = SCRIPT_LINE * 2000
    obj["data"] = {"a": lines}
    pad = size - limits.client_apply_annotations_bytes(obj)
    obj["data"] = {"a": lines + "x" * pad}
    assert limits.client_apply_annotations_bytes(obj) == size
    return obj


def test_plain_kubectl_apply_is_refused_at_the_byte_the_offline_count_says(
    module_control_plane: ControlPlane, namespace: str
) -> None:
    """The last-applied annotation's size, counted offline as kubectl encodes it, draws the line
    where the server does; the object itself is fine (``--server-side`` applies it), and
    ``minicluster render`` warns of exactly such objects."""
    cp = module_control_plane
    at = client_applied_at(namespace, limits.MAX_ANNOTATIONS_BYTES)
    over = client_applied_at(namespace, limits.MAX_ANNOTATIONS_BYTES + 1)
    assert limits.size_problems(over) == []
    assert limits.client_apply_problem(at) is None
    assert "--server-side" in (limits.client_apply_problem(over) or "")
    assert applied(cp, at)[0]
    accepted, said = applied(cp, over)
    assert not accepted
    assert re.search(f"metadata.annotations: {SERVER_SAYS['(256 KiB)']}", said), said
    assert applied(cp, over, "--server-side")[0]


def test_a_minicluster_too_large_for_plain_kubectl_apply(
    module_control_plane: ControlPlane, namespace: str
) -> None:
    """A MiniCluster with 300 kB of commands.pre: its ConfigMap, and only it, is too large for
    plain `kubectl apply` by the offline count and for the server, and applies server-side."""
    doc = spec(commands={"pre": SCRIPT_LINE * 7000})
    doc["metadata"]["namespace"] = namespace
    objects = render_unchecked(doc)
    flagged = [o for o in objects if limits.client_apply_problem(o)]
    assert [o["kind"] for o in flagged] == ["ConfigMap"]
    (config,) = flagged
    accepted, said = applied(module_control_plane, config)
    assert not accepted
    assert re.search(SERVER_SAYS["(256 KiB)"], said), said
    assert applied(module_control_plane, config, "--server-side")[0]
