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

One module per concept, each importing only those listed after it: ``verdicts`` (the entry
points ``refusals`` and ``semantic_errors``), ``crossobject`` (the facts between objects),
``objectrules`` (the hand-written rules of one object), ``schemas`` (the strict schemas) and
``manifest`` (reading a manifest that may be malformed). The names above are this package's.
"""

from flux_minicluster.kubecheck.schemas import (
    DEFAULT_VERSION,
    available_versions,
    schema_errors,
    schemas_missing,
)
from flux_minicluster.kubecheck.verdicts import refusals, semantic_errors

__all__ = [
    "DEFAULT_VERSION",
    "available_versions",
    "refusals",
    "schema_errors",
    "schemas_missing",
    "semantic_errors",
]
