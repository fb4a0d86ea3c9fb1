"""The SDK internals the product reads (``deploy/offline/sdkinternals.py``), against the
installed SDK.

Each use of a non-public part of the Pulumi SDK is exercised here, so a Pulumi upgrade that moves
one fails these tests by name rather than breaking ``minicluster render --stack`` for users.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from flux_minicluster.deploy.offline import sdkinternals
from flux_minicluster.deploy.offline.recorder import ProgramRun


def test_config_values_sees_every_config_key(run_pulumi: Callable[..., ProgramRun[Any]]) -> None:
    config = {"flux-minicluster:cluster": {"namespace": "x"}, "other:key": "plain"}
    run = run_pulumi(sdkinternals.config_values, config=config)
    assert run.result["flux-minicluster:cluster"] == {"namespace": "x"}
    assert run.result["other:key"] == "plain"


def test_registration_options_are_read_from_the_request(
    run_pulumi: Callable[..., ProgramRun[Any]],
) -> None:
    def program() -> None:
        first = k8s.core.v1.ConfigMap("first", metadata={"name": "a"})
        k8s.core.v1.ConfigMap(
            "second",
            metadata={"name": "b"},
            opts=pulumi.ResourceOptions(
                depends_on=[first],
                ignore_changes=["data"],
                replace_on_changes=["metadata"],
                delete_before_replace=True,
                retain_on_delete=True,
                deleted_with=first,
                additional_secret_outputs=["data"],
            ),
        )

    run = run_pulumi(program)
    first, second = (r for r in run.resources if r.typ == "kubernetes:core/v1:ConfigMap")
    options = second.options
    assert options is not None
    assert options.dependencies == (first.urn,)
    assert options.ignore_changes == ("data",)
    assert options.replace_on_changes == ("metadata",)
    assert options.delete_before_replace is True
    assert options.retain_on_delete is True
    assert options.deleted_with == first.urn
    assert options.additional_secret_outputs == ("data",)
    assert first.options is not None
    assert first.options.retain_on_delete is None
