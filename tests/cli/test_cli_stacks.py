"""`render --stack` and `check --stack` on stack files a user has edited: a mistake in the config
is the user's to fix (exit 2, one line naming the key), never an internal error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import edit_stack, minicluster, project_copy

from flux_minicluster.core.base import layout
from flux_minicluster.core.flux import certificate

P = "flux-minicluster"


def _burst_size(config: dict[str, Any]) -> None:
    config[f"{P}:minicluster"]["spec"]["spec"]["size"] = 3


def _burst_name(config: dict[str, Any]) -> None:
    config[f"{P}:minicluster"]["spec"]["metadata"]["name"] = "gcp-burst"


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (_burst_size, "spec.maxSize 3 is larger than the 2 hosts the lead declares"),
        (_burst_name, "must list this bursted cluster ('gcp-burst')"),
    ],
)
@pytest.mark.parametrize("command", ["render", "check"])
def test_a_burst_the_root_does_not_declare_is_a_user_error(
    tmp_path: Path, edit: Any, fragment: str, command: str
) -> None:
    project = project_copy(tmp_path / "p")
    edit_stack(project, "eks-burst", edit)
    # rendered alone, a burst needs the group's certificate
    cert = ("--curve-cert", str(tmp_path / "group.cert")) if command == "render" else ()
    result = minicluster(command, "--stack", "eks-burst", *cert, cwd=project)
    assert result.returncode == 2, result.stderr
    (line,) = [x for x in result.stderr.splitlines() if "root stack" in x]
    assert line.startswith(f"{P}:minicluster: ")
    assert fragment in line
    assert "organization/flux-minicluster/gke-root" in line
    assert "While processing" not in result.stderr
    assert "internal error" not in result.stderr


def _strategy(config: dict[str, Any]) -> None:
    config[f"{P}:keygen"] = {"strategy": "openssl"}


def _burst_cert(config: dict[str, Any]) -> None:
    config[f"{P}:curveCert"] = {"secure": "v1:AAAA:BBBB"}


@pytest.mark.parametrize(
    ("stack", "edit", "expected"),
    [
        ("local", _strategy, f"{P}:keygen.strategy: "),
        ("eks-burst", _burst_cert, f"{P}:curveCert: a burst uses its root's certificate"),
    ],
)
@pytest.mark.parametrize("command", ["render", "check"])
def test_offline_refuses_the_config_the_component_refuses(
    tmp_path: Path, stack: str, edit: Any, expected: str, command: str
) -> None:
    project = project_copy(tmp_path / "p")
    edit_stack(project, stack, edit)
    result = minicluster(command, "--stack", stack, cwd=project)
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr


def test_a_kubeconfig_or_context_pulumi_up_cannot_use_is_noted(tmp_path: Path) -> None:
    project = project_copy(tmp_path / "p")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\n"
        "contexts: [{name: kind-flux, context: {cluster: kind-flux, user: me}}]\n"
    )

    def missing(config: dict[str, Any]) -> None:
        config[f"{P}:cluster"]["kubeconfig"] = str(tmp_path / "no-such-kubeconfig")

    def unknown(config: dict[str, Any]) -> None:
        config[f"{P}:cluster"].update(kubeconfig=str(kubeconfig), context="kind-flx")

    edit_stack(project, "local", missing)
    result = minicluster("render", "--stack", "local", cwd=project)
    assert result.returncode == 0, result.stderr
    assert f"{P}:cluster.kubeconfig: {tmp_path / 'no-such-kubeconfig'} does not exist" in (
        result.stderr
    )
    edit_stack(project, "local", unknown)
    result = minicluster("render", "--stack", "local", cwd=project)
    assert result.returncode == 0, result.stderr
    assert f"{P}:cluster.context: 'kind-flx' is not a context of {kubeconfig}" in result.stderr
    assert "kind-flux" in result.stderr


@pytest.mark.parametrize("cloud", ["generic", "gke"])
def test_a_generic_load_balancer_in_front_of_the_lead_is_warned_about(
    tmp_path: Path, cloud: str
) -> None:
    """Only a known cloud's load balancer is known to keep the bursts' source addresses."""
    project = project_copy(tmp_path / "p")
    edit_stack(project, "gke-root", lambda c: c[f"{P}:cluster"].update(cloud=cloud))
    result = minicluster("render", "--stack", "gke-root", "--stack", "eks-burst", cwd=project)
    assert result.returncode == 0, result.stderr
    warned = "flux-root-lead NetworkPolicy drop every burst" in result.stderr
    assert warned == (cloud == "generic"), result.stderr


def _spec_cert(config: dict[str, Any]) -> None:
    cert = certificate.render(certificate.generate("in-spec", "flux-hello-0"))
    config[f"{P}:minicluster"] = {
        "spec": {
            "metadata": {"name": "flux-hello"},
            "spec": {"size": 2, "flux": {"curveCert": cert}, "containers": [{"image": "x"}]},
        }
    }


def _plain_stack_cert(config: dict[str, Any]) -> None:
    config[f"{P}:curveCert"] = certificate.render(certificate.generate("stack", "flux-hello-0"))


def test_render_stack_curve_cert_wins_over_the_specs_as_everywhere(tmp_path: Path) -> None:
    """The one precedence (core.flux.certificate.choose): --curve-cert is the deployer's certificate
    and wins over the spec's flux.curveCert for a stack as for a file; a stack file that gives
    another one in plain text contradicts it and is refused."""
    project = project_copy(tmp_path / "p")
    given = tmp_path / "given.cert"
    given.write_text(certificate.render(certificate.generate("given", "flux-hello-0")))
    edit_stack(project, "local", _spec_cert)
    result = minicluster("render", "--stack", "local", "--curve-cert", str(given), cwd=project)
    assert result.returncode == 0, result.stderr
    (secret,) = [d for d in yaml.safe_load_all(result.stdout) if d["kind"] == "Secret"]
    assert secret["stringData"][layout.CURVE_FILE] == given.read_text()

    edit_stack(project, "local", _plain_stack_cert)
    refused = minicluster("render", "--stack", "local", "--curve-cert", str(given), cwd=project)
    assert refused.returncode == 2
    assert f"{P}:curveCert: the stack gives another certificate than --curve-cert" in refused.stderr


def _garbage_cert(config: dict[str, Any]) -> None:
    config[f"{P}:curveCert"] = "not a certificate"


def _mismatched_cert(config: dict[str, Any]) -> None:
    one = certificate.generate("one", "flux-hello-0")
    other = certificate.generate("other", "flux-hello-0")
    text = certificate.render(one).replace(one.secret_key, other.secret_key)
    config[f"{P}:curveCert"] = text


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (_garbage_cert, "line 1: this line is not a section"),
        (_mismatched_cert, "curve.secret-key does not match curve.public-key"),
    ],
    ids=["garbage", "mismatched"],
)
@pytest.mark.parametrize(
    "command",
    [("render", "--stack", "local"), ("check", "--stack", "local", "-o", "json"), ("demo",)],
    ids=["render", "check", "demo"],
)
def test_a_bad_curve_cert_in_a_stack_file_is_named(
    tmp_path: Path, edit: Any, said: str, command: tuple[str, ...]
) -> None:
    project = project_copy(tmp_path / "p")
    edit_stack(project, "local", edit)
    result = minicluster(*command, cwd=project)
    assert result.returncode == 2, result.stderr
    line = f"{P}:curveCert: not a certificate Flux accepts: "
    assert line + said in result.stderr
    assert "internal error" not in result.stderr
    if "json" in command:  # one document whatever happens, as the README promises
        (problem,) = json.loads(result.stdout)["problems"]
        assert problem["path"] == f"{P}:curveCert"
        assert said in problem["message"]
