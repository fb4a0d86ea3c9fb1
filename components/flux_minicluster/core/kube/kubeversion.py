"""The Kubernetes release a MiniCluster is rendered for, and which Job fields it serves.

``helm template --kube-version`` for MiniClusters: the Job API grew the fields that make an
Indexed Job a first-class batch workload (a success policy, a pod failure policy, a retry budget
per index, a pod replacement policy, ``managedBy``) over several releases, each first behind a
feature gate. A field is rendered only for a release that serves it; this module is the one place
that says which release that is (``JOB_FIELDS``), and everything else asks ``serves``.

**When a release serves a field.** Each row gives the first release whose feature gate is on by
default (beta, then GA) and the first release we render the field for: one minor later. The
Kubernetes version skew policy lets kube-controller-manager run one minor behind kube-apiserver
(during an upgrade, control plane first, it does), and it is the Job controller that acts on these
fields: an API server of 1.31 stores a ``successPolicy`` that a 1.30 Job controller, where the
gate is off by default, ignores, and the Job would then wait for every index after all. So a field
is rendered for release N when the Job controllers of N and N-1 both act on it by default.

The gates' history (``pkg/features/versioned_kube_features.go`` of k8s.io/kubernetes):

    field                 gate                      on by default  GA    rendered from
    podFailurePolicy      JobPodFailurePolicy       1.26           1.31  1.29 (*)
    backoffLimitPerIndex  JobBackoffLimitPerIndex   1.29           1.33  1.30
    podReplacementPolicy  JobPodReplacementPolicy   1.29           1.34  1.30
    successPolicy         JobSuccessPolicy          1.31           1.33  1.32
    managedBy             JobManagedBy              1.32           1.35  1.33
    completions changed   ElasticIndexedJob         1.27           1.31  1.28 (autoscale)

(*) The OpenAPI of 1.27 and 1.28 requires ``onPodConditions`` in every rule of a
``podFailurePolicy``, so the strict schemas of those releases (and kubectl's validation) refuse
a rule on exit codes: the policy is rendered from 1.29.

**The range.** ``OLDEST`` is the oldest release whose strict OpenAPI schemas the checks here have
(``kubernetes-validate`` ships 1.25 to 1.37; ``kubecheck`` validates every rendering
against the version's own schemas): below it a rendering could not be checked, so it is refused.
A newer release than the table knows serves everything the table lists.

**The default** (``DEFAULT``, 1.34): every field of the table but ``managedBy``'s GA is served
there, so a MiniCluster gets the batch behaviour it was designed for without anyone asking; it is
two minors behind the control plane the e2e suite runs (1.36), so what is proven there holds on
clusters a little older, and ``kubecheck`` checks against the same release by default. A
cluster older than 1.34 is named with ``--kube-version`` (CLI), ``cluster.kubernetesVersion``
(stacks) or ``kube_version`` (the component).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from functools import total_ordering
from typing import Final

from flux_minicluster.core.base.errors import Problem, SpecError

__all__ = [
    "DEFAULT",
    "JOB_FIELDS",
    "OLDEST",
    "JobField",
    "KubeVersion",
    "parse",
    "serves",
]

_VERSION: Final = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+][0-9A-Za-z.+-]*)?")


@total_ordering
@dataclass(frozen=True)
class KubeVersion:
    """A Kubernetes minor release (patch releases never change the Job API)."""

    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, KubeVersion):
            return NotImplemented
        return (self.major, self.minor) < (other.major, other.minor)


class JobField(enum.StrEnum):
    """A Job ``spec`` field that only some releases serve."""

    POD_FAILURE_POLICY = "podFailurePolicy"
    BACKOFF_LIMIT_PER_INDEX = "backoffLimitPerIndex"
    """With ``maxFailedIndexes``: the same gate."""
    POD_REPLACEMENT_POLICY = "podReplacementPolicy"
    SUCCESS_POLICY = "successPolicy"
    MANAGED_BY = "managedBy"
    ELASTIC_INDEXED = "completions"
    """Not a new field: ``completions`` changed together with ``parallelism`` on a live Indexed
    Job (ElasticIndexedJob), which the autoscaler does to resize its own Job."""


@dataclass(frozen=True)
class _Served:
    on_by_default: KubeVersion
    """The first release whose Job controller acts on the field by default (its beta)."""
    ga: KubeVersion
    schemas_from: KubeVersion | None = None
    """The first release whose published OpenAPI describes the field as the API server takes it,
    when that is later (kubectl's client-side validation, and ours, read those schemas)."""

    @property
    def rendered_from(self) -> KubeVersion:
        """One minor after ``on_by_default`` (the controller may lag the API server by one), or
        ``schemas_from`` when that is later."""
        after = KubeVersion(self.on_by_default.major, self.on_by_default.minor + 1)
        return max(after, self.schemas_from) if self.schemas_from is not None else after


JOB_FIELDS: Final[dict[JobField, _Served]] = {
    # 1.27's and 1.28's OpenAPI make every rule's onPodConditions required, which an exit-code
    # rule cannot have (the API server takes one of the two): their strict schemas refuse it.
    JobField.POD_FAILURE_POLICY: _Served(
        KubeVersion(1, 26), KubeVersion(1, 31), schemas_from=KubeVersion(1, 29)
    ),
    JobField.BACKOFF_LIMIT_PER_INDEX: _Served(KubeVersion(1, 29), KubeVersion(1, 33)),
    JobField.POD_REPLACEMENT_POLICY: _Served(KubeVersion(1, 29), KubeVersion(1, 34)),
    JobField.SUCCESS_POLICY: _Served(KubeVersion(1, 31), KubeVersion(1, 33)),
    JobField.MANAGED_BY: _Served(KubeVersion(1, 32), KubeVersion(1, 35)),
    JobField.ELASTIC_INDEXED: _Served(KubeVersion(1, 27), KubeVersion(1, 31)),
}
"""Which release serves which Job field: the one table (see the module docstring)."""

OLDEST: Final = KubeVersion(1, 25)
DEFAULT: Final = KubeVersion(1, 34)


def serves(version: KubeVersion, field: JobField) -> bool:
    """Whether a MiniCluster rendered for ``version`` carries ``field``."""
    return version >= JOB_FIELDS[field].rendered_from


def parse(text: str | KubeVersion, field: str = "kube_version") -> KubeVersion:
    """``"1.33"``, ``"v1.33.2"`` or ``"1.33.0-gke.100"`` as a release; a ``SpecError`` at
    ``field`` when it is not one, or is older than ``OLDEST``."""
    if isinstance(text, KubeVersion):
        version = text
    else:
        match = _VERSION.fullmatch(str(text).strip())
        if match is None:
            raise SpecError(
                Problem(
                    field,
                    f"must be a Kubernetes version such as {DEFAULT} or v{DEFAULT}.0, got {text!r}",
                )
            )
        version = KubeVersion(int(match[1]), int(match[2]))
    if version < OLDEST:
        raise SpecError(
            Problem(
                field,
                f"Kubernetes {version} is older than {OLDEST}, the oldest release whose "
                f"strict schemas flux-minicluster checks renderings against; give {OLDEST} "
                "or newer",
            )
        )
    return version
