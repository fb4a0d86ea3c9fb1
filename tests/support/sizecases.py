"""MiniClusters at Kubernetes' size limits, just over and just under: shared by the offline rule's
tests (tests/core/test_sizes.py), the command line's (tests/cli/test_cli_sizes.py) and the real API
server's (tests/e2e/test_server_sizes.py), so they judge the same objects."""

from __future__ import annotations

from typing import Any

from flux_minicluster.core.kube import limits
from flux_minicluster.core.planning.plan import build
from flux_minicluster.core.reading.loading import parse
from flux_minicluster.core.render.manifests import render


def spec(**container: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "big", "namespace": "default"},
        "spec": {"size": 1, "containers": [{"image": "x", "command": "hostname", **container}]},
    }


def with_pod(doc: dict[str, Any], **pod: Any) -> dict[str, Any]:
    doc["spec"]["pod"] = pod
    return doc


# (spec, the field named, the object and its field in the message)
TOO_LARGE = {
    "command over 1 MiB": (
        spec(command="echo " + "x" * 1_100_000),
        "spec.containers[0].command",
        "ConfigMap big-entrypoint too large: 111",
    ),
    "pod annotations over 256 KiB": (
        with_pod(spec(), annotations={"example.com/note": "x" * 300_000}),
        "spec.pod.annotations",
        "Job big (spec.template.metadata.annotations) too large: 300",
    ),
    "20,000 environment entries": (
        spec(environment={f"VAR_{i:05d}": f"value-{i}" for i in range(20_000)}),
        "spec.containers[0].environment",
        "Job big too large: about",
    ),
    "one environment value of 1.6 MB": (
        spec(environment={"BIG": "x" * 1_600_000}),
        "spec.containers[0].environment.BIG",
        "Job big too large: about",
    ),
}
JUST_UNDER = {
    "command of 1,000,000 bytes": spec(command="echo " + "x" * 1_000_000),
    "pod annotations of 250,000 bytes": with_pod(spec(), annotations={"a": "x" * 250_000}),
    "one environment value of 1.4 MB": spec(environment={"BIG": "x" * 1_400_000}),
}


def render_unchecked(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects as rendered were the size rule not applied (to hand them to kubecheck)."""
    real = limits.size_problems
    try:
        limits.size_problems = lambda manifest: []
        return render(build(parse(doc))).objects()
    finally:
        limits.size_problems = real
