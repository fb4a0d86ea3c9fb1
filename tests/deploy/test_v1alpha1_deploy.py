"""The component over a v1alpha1 MiniCluster: the RESTful server's outputs and the objects it keeps
(the v1alpha1 document and its objects are tests/core/test_v1alpha1.py's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from support.v1alpha1cases import APP, v1

from flux_minicluster.core.flux import credentials


def test_the_component_exports_the_restful_server_and_keeps_its_secrets(
    run_pulumi: Callable[..., Any], curve_cert: str
) -> None:
    import pulumi

    from flux_minicluster import MiniCluster
    from flux_minicluster.testing import MiniClusterMocks

    spec = v1(
        {
            "users": [{"name": "peenut"}],
            "containers": [APP],
            "volumes": {"keep": {"path": "/k", "delete": False}, "scratch": {"path": "/s"}},
        }
    )

    def program() -> None:
        cluster = MiniCluster("mc", {"spec": spec})
        for name in ("restful_url", "restful_user", "restful_token", "restful_secret_key"):
            pulumi.export(name, getattr(cluster, name))

    runs = [run_pulumi(program, mocks=MiniClusterMocks(curve_cert=curve_cert)) for _ in (1, 2)]
    exports = runs[0].exports
    assert exports["restful_url"].value == "http://mc-restful.hpc.svc.cluster.local:5000"
    assert exports["restful_user"].value == "flux"
    assert exports["restful_token"].secret
    assert exports["restful_token"].value == credentials.restful_token(curve_cert)
    # The client signs its token requests with the server's key: given, or derived.
    assert exports["restful_secret_key"].secret
    assert exports["restful_secret_key"].value == credentials.restful_secret_key(curve_cert)

    def munge(run: Any) -> tuple[Any, bool]:
        (secret,) = [r for r in run.resources if r.name == "mc-secret-mc-munge"]
        from flux_minicluster.deploy.offline.recorder import contains_secret

        return secret.plain_inputs["stringData"]["munge.key"], contains_secret(secret.inputs)

    assert munge(runs[0]) == munge(runs[1]) == (credentials.munge_key(curve_cert), True)
    retained = {
        r.name: r.options.retain_on_delete if r.options else None
        for r in runs[0].resources
        if r.typ.startswith("kubernetes:core/v1:PersistentVolume")
    }
    assert retained == {
        "mc-persistentvolume-hpc-mc-keep": True,
        "mc-persistentvolumeclaim-mc-keep": True,
        "mc-persistentvolume-hpc-mc-scratch": None,
        "mc-persistentvolumeclaim-mc-scratch": None,
    }
