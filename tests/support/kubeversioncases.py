"""An example rendered for a target Kubernetes release: shared by the core's tests of the release
and the Job fields it serves (tests/core/test_kube_version.py) and the policies' over the same
Jobs (tests/policy/test_kube_version_policy.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from flux_minicluster.core.kube import kubeversion
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import parse
from flux_minicluster.core.render.manifests import Rendering, render


def rendering_of(path: Path, version: str, **pod: Any) -> Rendering:
    """An example rendered for ``version``, with pod options (restartPolicy...)."""
    document = yaml.safe_load(path.read_text())
    document["spec"]["pod"] = {**document["spec"].get("pod", {}), **pod}
    return render(plans.build(parse(document), kubeversion.parse(version)), None)


def job_of(path: Path, version: str, **pod: Any) -> dict[str, Any]:
    return rendering_of(path, version, **pod).job
