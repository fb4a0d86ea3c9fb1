"""The component package other languages use: its schema, its entry point, and that it is the
same MiniCluster as the Python class.

``components/schema.json`` is the contract a TypeScript, Go or YAML program's generated SDK is
made from; ``make golden`` (UPDATE_GOLDEN=1) refreshes it. The e2e suite checks that the real
``pulumi package get-schema ./components`` prints the same.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Any

import grpc
import pulumi
import pytest
import yaml
from pulumi.provider.experimental.util import camel_case
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

from flux_minicluster import __version__
from flux_minicluster.deploy.component import keygen
from flux_minicluster.deploy.component.awaiting import WAIT_MODES
from flux_minicluster.deploy.component.minicluster import (
    OUTPUTS,
    TYPE,
    MiniCluster,
    MiniClusterArgs,
)
from flux_minicluster.deploy.component.multilanguage import (
    SECRETS,
    ContainerRuntime,
    KeygenStrategy,
    MiniClusterProvider,
    Wait,
    schema,
)
from flux_minicluster.deploy.offline.recorder import (
    ProgramRun,
    RegistrationRecorder,
    contains_secret,
)

ROOT = Path(__file__).resolve().parents[2]
COMPONENTS = ROOT / "components"
GOLDEN_SCHEMA = COMPONENTS / "schema.json"
CERT = (ROOT / "tests" / "golden" / "fixed-curve.cert").read_text()


def test_schema_is_the_checked_in_contract() -> None:
    served = json.dumps(schema(), indent=2) + "\n"
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN_SCHEMA.write_text(served)
    assert json.loads(GOLDEN_SCHEMA.read_text()) == json.loads(served), (
        "the component's schema changed: review it, then `make golden`"
    )
    assert schema()["version"] == __version__


def test_schema_lists_every_argument_and_output_with_the_secrets_marked() -> None:
    resource = schema()["resources"][TYPE]
    assert set(resource["inputProperties"]) == {
        camel_case(key) for key in MiniClusterArgs.__optional_keys__
    }
    assert resource["requiredInputs"] == ["spec"]
    assert list(resource["properties"]) == [camel_case(name) for name in OUTPUTS]
    marked = {
        (section, name)
        for section in ("inputProperties", "properties")
        for name, prop in resource[section].items()
        if prop.get("secret")
    }
    assert marked == set(SECRETS)
    assert {("inputProperties", "curveCert"), ("properties", "curveCert")} <= marked
    assert all(prop.get("description") for prop in resource["inputProperties"].values())
    assert all(prop.get("description") for prop in resource["properties"].values())


@pytest.mark.parametrize(
    ("enum", "python_face"),
    [
        (Wait, WAIT_MODES),
        (KeygenStrategy, keygen.STRATEGIES),
        (ContainerRuntime, keygen.CONTAINER_RUNTIMES),
    ],
)
def test_enums_offer_what_the_python_face_accepts(
    enum: type[StrEnum], python_face: tuple[str, ...]
) -> None:
    assert [member.value for member in enum] == list(python_face)


def test_requirements_are_the_package_dependencies() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    lines = (COMPONENTS / "requirements.txt").read_text().splitlines()
    required = [line for line in lines if line and not line.startswith("#")]
    assert required == pyproject["project"]["dependencies"]


def test_the_entry_point_serves_the_schema_over_grpc() -> None:
    """``python components/``, as Pulumi's Python host runs it, answers GetSchema."""
    env = {**os.environ, "PYTHONPATH": ""}
    # The engine address is only dialled once the engine sends work; GetSchema needs none.
    with subprocess.Popen(
        [sys.executable, str(COMPONENTS), "127.0.0.1:1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT / "tests",
    ) as plugin:
        try:
            assert plugin.stdout is not None
            port = plugin.stdout.readline().strip()
            assert port.isdigit(), plugin.stderr.read() if plugin.stderr else port
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = provider_pb2_grpc.ResourceProviderStub(channel)
                reply = stub.GetSchema(provider_pb2.GetSchemaRequest(), timeout=60)
        finally:
            plugin.kill()
    assert json.loads(reply.schema) == json.loads(GOLDEN_SCHEMA.read_text())


# --- the same MiniCluster from either face -------------------------------------------------------


def _over_the_wire(value: Any) -> Any:
    """A value as the engine hands it to a provider: every number a double."""
    return json.loads(json.dumps(value), parse_int=float)


def _registered(run: ProgramRun[Any]) -> list[tuple[str, str, Any]]:
    return sorted(
        (r.typ, r.name, r.plain_inputs)
        for r in run.resources
        if r.custom and not r.typ.startswith("pulumi:providers:")
    )


def _burst() -> dict[str, Any]:
    return {
        "apiVersion": "flux-framework.org/v1alpha2",
        "kind": "MiniCluster",
        "metadata": {"name": "burst"},
        "spec": {"size": 2, "containers": [{"image": "ubuntu:noble"}]},
    }


GROUP = {"lead_name": "root", "lead_size": 4, "lead_port": 30093,
         "clusters": [{"name": "burst", "size": 2}]}  # fmt: skip
CASES = {
    "hello-world": (
        yaml.safe_load((ROOT / "examples" / "hello-world.yaml").read_text()),
        {"curve_cert": CERT, "wait": "none", "keygen": {"rotation": "1"}},
        {"curveCert": CERT, "wait": "none", "keygen": {"rotation": "1"}},
    ),
    "bursting-root": (
        yaml.safe_load((ROOT / "examples" / "bursting-root.yaml").read_text()),
        {"curve_cert": CERT, "namespace": "hpc", "lead_source_ranges": ["10.0.0.0/8"]},
        {"curveCert": CERT, "namespace": "hpc", "leadSourceRanges": ["10.0.0.0/8"]},
    ),
    # A queued MiniCluster: waitTimeout arrives as a double.
    "queued": (
        yaml.safe_load((ROOT / "examples" / "hello-world.yaml").read_text()),
        {
            "curve_cert": CERT,
            "queue": "team-a",
            "managed_by": "kueue.x-k8s.io/multikueue",
            "wait_timeout": 300,
        },
        {
            "curveCert": CERT,
            "queue": "team-a",
            "managedBy": "kueue.x-k8s.io/multikueue",
            "waitTimeout": 300.0,
        },
    ),
    # The group arrives as an Output (a StackReference's), camelCase and with doubles.
    "burst-of-a-group": (
        _burst(),
        {"curve_cert": CERT, "lead_broker": "lead.example.org", "burst_group": GROUP},
        {
            "curveCert": CERT,
            "leadBroker": "lead.example.org",
            "burstGroup": {camel_case(k): v for k, v in _over_the_wire(GROUP).items()},
        },
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_other_languages_get_the_objects_python_gets(run_pulumi: Any, case: str) -> None:
    document, python_args, wire = CASES[case]
    python = run_pulumi(lambda: MiniCluster("mc", {"spec": document, **python_args}))  # type: ignore[typeddict-item]
    provider = MiniClusterProvider(__version__)

    def construct() -> Any:
        inputs = {"spec": _over_the_wire(document), **wire}
        if "burstGroup" in inputs:
            inputs["burstGroup"] = pulumi.Output.from_input(inputs["burstGroup"])
        return provider.construct("mc", TYPE, inputs)

    other = run_pulumi(construct)
    assert _registered(other) == _registered(python)
    state = other.result.state
    assert set(state) >= {camel_case(name) for name in OUTPUTS if not name.startswith("restful")}


def test_the_certificate_stays_secret_from_either_face(run_pulumi: Any) -> None:
    document, _, wire = CASES["hello-world"]
    provider = MiniClusterProvider(__version__)

    def construct() -> Any:
        inputs = {"spec": document, **wire, "curveCert": pulumi.Output.secret(CERT)}
        result = provider.construct("mc", TYPE, inputs)
        pulumi.export("curveCert", result.state["curveCert"])
        return result

    run = run_pulumi(construct, mocks=RegistrationRecorder())
    assert run.exports["curveCert"].secret
    (secret,) = [r for r in run.resources if r.typ == "kubernetes:core/v1:Secret"]
    assert contains_secret(secret.inputs)


@pytest.mark.parametrize(
    ("inputs", "field"),
    [
        ({"spec": pulumi.Output.from_input({"size": 1})},
         "spec: must be known when the program runs"),
        ({"spec": {"size": 1, "containers": [{"image": "a"}], "colour": "red"}},
         "spec.colour: unknown field"),
        ({"spec": {"containers": [{"image": "a"}]}, "keygen": {"strategy": "magic"}},
         "keygen.strategy"),
    ],
)  # fmt: skip
def test_bad_inputs_are_refused_naming_the_field(
    run_pulumi: Any, inputs: dict[str, Any], field: str
) -> None:
    provider = MiniClusterProvider(__version__)
    with pytest.raises(Exception, match=re.escape(field)) as raised:
        run_pulumi(lambda: provider.construct("mc", TYPE, inputs))
    assert "Traceback" not in str(raised.value)


def test_spec_is_typed_with_every_v1alpha2_field_of_the_model() -> None:
    """Other languages get the pydantic model as object types: every field a v1alpha2 document
    may set, by its camelCase name; none of the v1alpha1-only ones."""
    from pydantic import BaseModel
    from pydantic.alias_generators import to_camel

    from flux_minicluster.core.spec.models import MiniClusterSpec

    served = json.loads(GOLDEN_SCHEMA.read_text())
    types = served["types"]
    spec = served["resources"]["minicluster:index:MiniCluster"]["inputProperties"]["spec"]
    assert spec["plain"] is True
    assert [m["$ref"].rsplit(":", 1)[-1] for m in spec["oneOf"]] == [
        "MiniClusterDocument",
        "MiniClusterSpec",
    ]
    checked = 0
    todo: list[type[BaseModel]] = [MiniClusterSpec]
    seen: set[str] = set()
    while todo:
        model = todo.pop()
        if model.__name__ in seen:
            continue
        seen.add(model.__name__)
        legacy = {
            f
            for d in model.__pydantic_decorators__.field_validators.values()
            if d.func.__name__ == "v1alpha1_only"
            for f in d.info.fields
        }
        properties = types[f"minicluster:index:{model.__name__}"]["properties"]
        for name, field in model.model_fields.items():
            key = field.alias or to_camel(name)
            assert (key in properties) == (name not in legacy), (model.__name__, key)
            checked += 1
            for arg in (field.annotation, *getattr(field.annotation, "__args__", ())):
                for inner in (arg, *getattr(arg, "__args__", ())):
                    model_type = isinstance(inner, type) and issubclass(inner, BaseModel)
                    if model_type and name not in legacy:
                        todo.append(inner)
    assert checked > 150


def undescribed_spec_fields(types: dict[str, Any]) -> tuple[list[str], int]:
    """Every type a typed ``spec`` reaches (from MiniClusterDocument and MiniClusterSpec) and
    every property of one that has no description, as ``Type`` or ``Type.property``; and how
    many types and properties were looked at."""
    prefix = "minicluster:index:"
    reached: set[str] = set()
    todo = [f"{prefix}MiniClusterDocument", f"{prefix}MiniClusterSpec"]
    while todo:
        token = todo.pop()
        if token not in reached:
            reached.add(token)
            todo += re.findall(r'"#/types/([^"]+)"', json.dumps(types[token]))
    missing: list[str] = []
    looked = 0
    for token in sorted(reached):
        name = token.removeprefix(prefix)
        looked += 1
        if not types[token].get("description", "").strip():
            missing.append(name)
        for key, prop in types[token].get("properties", {}).items():
            looked += 1
            if not prop.get("description", "").strip():
                missing.append(f"{name}.{key}")
    return missing, looked


def test_every_spec_type_and_field_is_described() -> None:
    """The SDKs of other languages document each field of a typed ``spec`` with the schema's
    description, taken from the model's class and attribute docstrings (``core/spec/models.py``):
    every type a spec reaches, and every property of one, has a description."""
    types = json.loads(GOLDEN_SCHEMA.read_text())["types"]
    missing, looked = undescribed_spec_fields(types)
    assert not missing, f"add a docstring in core/spec/models.py for: {', '.join(missing)}"
    assert looked > 200
