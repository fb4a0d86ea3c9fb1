"""Unit-testing a Pulumi program that uses ``MiniCluster``, under Pulumi's mock runtime.

Under ``pulumi.runtime.set_mocks`` nothing runs a ``Command``, so the keygen Command that makes a
MiniCluster's curve certificate prints nothing and the component refuses the empty certificate.
``MiniClusterMocks`` answers that Command with a real certificate (made once per Command, or the
one you give) and records every registration, so a test can assert what a program declares::

    import pulumi
    from flux_minicluster.testing import MiniClusterMocks, use_mocks

    mocks = use_mocks(MiniClusterMocks())          # before the program module is imported

    def test_my_cluster():
        import my_program                          # cluster = MiniCluster("hpc", {...}), size 4

        def job_registered(job_name):
            jobs = [r for r in mocks.resources if r.typ == "kubernetes:batch/v1:Job"]
            assert jobs[0].plain_inputs["spec"]["parallelism"] == 4

        @pulumi.runtime.test
        def check():
            # The Job is registered once the keygen Command's certificate is known: wait for an
            # output tied to it (job_name) before looking at what was registered.
            return my_program.cluster.job_name.apply(job_registered)

        check()

Or run a program function and get what it registered and exported in one call, with ``run``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pulumi
from pulumi.runtime.mocks import MockResourceArgs

from flux_minicluster.core.flux import certificate
from flux_minicluster.deploy.offline.recorder import (
    COMMAND_TYPE,
    ProgramRun,
    RecordedResource,
    RecordingMonitor,
    RegistrationRecorder,
    plain,
    run_program,
)

__all__ = [
    "MiniClusterMocks",
    "ProgramRun",
    "RecordedResource",
    "plain",
    "run",
    "use_mocks",
]

T = TypeVar("T")
_CERT_NAME = re.compile(r"^cert_name=(\S+)$", re.MULTILINE)


class MiniClusterMocks(RegistrationRecorder):
    """Mocks that record every registration and answer MiniCluster keygen Commands.

    ``curve_cert``: the certificate every keygen Command prints (default: a new one per
    Command). ``stack_references``: stack name -> ``{"outputs": {...}, "secretOutputNames":
    [...]}``, for a program that reads another stack (a burst reads its root).
    """

    def __init__(
        self,
        *,
        curve_cert: str | None = None,
        stack_references: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self._fixed = curve_cert
        super().__init__(command_stdout=self._keygen, stack_references=stack_references)

    def _keygen(self, args: MockResourceArgs) -> str:
        if self._fixed is not None:
            return self._fixed.removesuffix("\n")
        script = str(args.inputs.get("create") or "")
        found = _CERT_NAME.search(script)
        name = found.group(1).strip("'") if found else "minicluster"
        cert = certificate.generate(name=name, hostname=f"{name}-0")
        return certificate.render(cert).removesuffix("\n")  # as pulumi-command prints it

    def commands(self) -> list[RecordedResource]:
        """The Commands registered (one keygen per MiniCluster whose certificate is made)."""
        return self.of_type(COMMAND_TYPE)


def use_mocks(
    mocks: MiniClusterMocks | None = None,
    *,
    project: str = "project",
    stack: str = "stack",
    preview: bool = False,
) -> MiniClusterMocks:
    """``pulumi.runtime.set_mocks`` with ``mocks`` (a new ``MiniClusterMocks`` by default), and
    the monitor that records each registration's options; returns the mocks."""
    mocks = mocks if mocks is not None else MiniClusterMocks()
    mocks.preview = preview
    pulumi.runtime.set_mocks(
        mocks, project=project, stack=stack, preview=preview, monitor=RecordingMonitor(mocks)
    )
    return mocks


def run(
    program: Callable[[], T],
    *,
    mocks: MiniClusterMocks | None = None,
    project: str = "project",
    stack: str = "stack",
    preview: bool = False,
    config: Mapping[str, Any] | None = None,
) -> ProgramRun[T]:
    """Run ``program`` as a Pulumi program under ``mocks``; what it registered and exported.

    ``config`` keys are full (``project:key``); values that are not strings are JSON-encoded, as
    ``pulumi config set --path`` stores them.
    """
    return run_program(
        program,
        mocks=mocks if mocks is not None else MiniClusterMocks(),
        project=project,
        stack=stack,
        preview=preview,
        config=config,
    )
