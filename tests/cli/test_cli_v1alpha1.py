"""A v1alpha1 MiniCluster whose curve cert is a Secret of the user's, through the CLI's renderer
and the component (the v1alpha1 document itself is tests/core/test_v1alpha1.py's)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.v1alpha1cases import APP, by, v1

from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.reading.loading import parse


def test_with_a_curve_cert_secret_the_certificate_must_be_the_one_it_holds(
    run_pulumi: Callable[..., Any], curve_cert: str, tmp_path: Path
) -> None:
    """The pod template's public key, the published certificate and the derived credentials
    must describe the certificate the brokers mount, which only the caller can give."""
    from flux_minicluster import MiniCluster
    from flux_minicluster.cli.render import render_file
    from flux_minicluster.core.flux import certificate
    from flux_minicluster.core.kube import labels as lbl
    from flux_minicluster.deploy.offline.recorder import COMMAND_TYPE, RegistrationRecorder

    doc = v1({"flux": {"curveCertSecret": "site-curve"}, "containers": [{**APP, "command": "x"}]})
    both = {
        **doc,
        "spec": {**doc["spec"], "flux": {**doc["spec"]["flux"], "curveCert": curve_cert}},
    }
    with pytest.raises(SpecError, match=r"spec.flux.curveCertSecret: cannot be used together"):
        parse(both)
    path = tmp_path / "mc.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(SpecError, match="give that certificate as --curve-cert FILE"):
        render_file(str(path))
    cert_file = tmp_path / "site.cert"
    cert_file.write_text(curve_cert)
    (job,) = by(render_file(str(path), curve_cert=cert_file), "Job")
    annotations = job["spec"]["template"]["metadata"]["annotations"]
    assert annotations[lbl.CURVE_PUBLIC_KEY_ANNOTATION] == certificate.parse(curve_cert).public_key

    mocks = RegistrationRecorder()
    run = run_pulumi(
        lambda: MiniCluster("mc", {"spec": doc, "curve_cert": curve_cert}), mocks=mocks
    )
    assert mocks.of_type(COMMAND_TYPE) == [], "no keygen: the certificate is the Secret's"
    assert run.resources
