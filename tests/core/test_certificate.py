"""A certificate Flux refuses means brokers that never connect, so we check it the way Flux does.

The live CURVE test is the point: keys we generate, render and parse back must really let a
ZeroMQ client and server (both holding the one shared certificate, as every Flux broker does)
talk, and a client with the wrong server key must get nothing.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
import zmq
import zmq.utils.z85
from hypothesis import given
from hypothesis import strategies as st
from support.corpus import V1ALPHA2
from support.curveexchange import exchange

from flux_minicluster.core.flux.certificate import (
    CertificateError,
    CurveCertificate,
    curve_public,
    generate,
    parse,
    render,
    write,
    z85_decode,
    z85_encode,
)

REPO = Path(__file__).resolve().parents[2]
OPERATOR_SAMPLE = V1ALPHA2 / "custom-config" / "minicluster.yaml"

PUBLIC = "dnMzaCkQOzL:=Obdhkry[a8:^aBY:o.=%f8*}Rr5"
SECRET = "bAExaWUAsAbAC]1jk-bZ/jTX*vewCmS(csdv>mM+"
OTHER_SECRET = "OGqhGL1Q4Fd:PZ75^9S*PY)/?^b=.}3kO8.e1n=b"

VALID = f"""#  ZeroMQ CURVE **Secret** Certificate
#  DO NOT DISTRIBUTE

metadata
    name = "flux-sample"
    keygen.hostname = "flux-sample-0"
curve
    public-key = "{PUBLIC}"
    secret-key = "{SECRET}"
"""


def test_fixture_keys_are_a_real_pair() -> None:
    assert zmq.curve_public(SECRET.encode()).decode() == PUBLIC
    assert zmq.curve_public(OTHER_SECRET.encode()).decode() != PUBLIC


@given(st.binary(min_size=32, max_size=32))
def test_our_curve_public_is_libzmqs(secret: bytes) -> None:
    """Checking a certificate derives its public key without pyzmq; it must be libzmq's key."""
    secret_z85 = zmq.utils.z85.encode(secret).decode()
    assert z85_encode(secret) == secret_z85
    assert z85_decode(secret_z85) == secret
    ours = z85_encode(curve_public(secret))
    assert ours == zmq.curve_public(secret_z85.encode()).decode()


def test_checking_a_certificate_does_not_import_pyzmq() -> None:
    code = (
        "import sys; from flux_minicluster.core.flux.certificate import parse; "
        f"parse({VALID!r}); print('zmq' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"


def test_render_is_flux_keygen_layout_exactly() -> None:
    cert = CurveCertificate(
        PUBLIC, SECRET, (("name", "flux-sample"), ("keygen.hostname", "flux-sample-0"))
    )
    assert render(cert) == VALID
    assert parse(VALID) == cert


def test_generate_render_parse_round_trip() -> None:
    cert = generate("flux-sample", "flux-sample-0", extra_metadata={"keygen.time": "2024-10-28"})
    text = render(cert)
    assert text.endswith("\n")
    again = parse(text)
    assert again == cert
    assert render(again) == text
    assert again.name == "flux-sample"
    assert again.hostname == "flux-sample-0"
    assert [key for key, _ in cert.metadata] == [
        "name",
        "keygen.hostname",
        "keygen.zmq-version",
        "keygen.time",
    ]
    assert cert.meta("keygen.zmq-version") == zmq.zmq_version()


def test_generate_makes_a_new_pair_each_time_and_no_timestamp() -> None:
    first, second = generate("a", "a-0"), generate("a", "a-0")
    assert first.secret_key != second.secret_key
    assert first.metadata == second.metadata  # nothing time-dependent unless asked for
    assert all("time" not in key for key, _ in first.metadata)


@pytest.mark.parametrize(
    ("name", "hostname", "extra", "fragment"),
    [
        ("", "h-0", None, "name must not be empty"),
        ("n", "", None, "keygen.hostname must not be empty"),
        ("n", "h-0", {"name": "x"}, "cannot set name"),
        ("n", "h-0", {"keygen.hostname": "x"}, "cannot set keygen.hostname"),
        ('say "hi"', "h-0", None, "contains '\"'"),
        ("n", "h-0", {"bad key": "x"}, "may only use letters"),
        ("n", "h-0", {"note": "x" * 260}, "byte line"),
    ],
)
def test_generate_refuses_what_flux_could_not_read(
    name: str, hostname: str, extra: dict[str, str] | None, fragment: str
) -> None:
    with pytest.raises(CertificateError) as excinfo:
        generate(name, hostname, extra_metadata=extra)
    assert fragment in str(excinfo.value)


def test_repr_never_shows_the_secret() -> None:
    cert = parse(VALID)
    assert SECRET not in repr(cert)
    assert PUBLIC in repr(cert)


def _replace(old: str, new: str) -> Callable[[str], str]:
    def mutate(text: str) -> str:
        assert old in text
        return text.replace(old, new, 1)

    return mutate


BROKEN = [
    ("unquoted value", _replace('"flux-sample"\n', "flux-sample\n"), "must be double-quoted"),
    ("half quoted", _replace('"flux-sample"', '"flux-sample'), "must be double-quoted"),
    ("unquoted key", _replace(f'"{PUBLIC}"', PUBLIC), "must be double-quoted"),
    ("not Z85", _replace(PUBLIC, PUBLIC[:10] + " " + PUBLIC[11:]), "outside the Z85 alphabet"),
    ("Z85 overflow", _replace(PUBLIC, "#" * 40), "do not decode to 4 bytes"),
    ("39 chars", _replace(PUBLIC, PUBLIC[:39]), "it has 39 characters"),
    ("41 chars", _replace(SECRET, SECRET + "a"), "curve.secret-key is not a valid CURVE key"),
    (
        "mismatched pair",
        _replace(SECRET, OTHER_SECRET),
        "curve.secret-key does not match curve.public-key",
    ),
    ("unknown curve key", _replace("curve\n", 'curve\n    extra = "x"\n'), "not 'extra'"),
    ("missing secret", _replace(f'    secret-key = "{SECRET}"\n', ""), "secret-key is missing"),
    ("missing public", _replace(f'    public-key = "{PUBLIC}"\n', ""), "public-key is missing"),
    ("no curve section", lambda t: t.split("curve\n")[0], "public-key is missing"),
    ("empty file", lambda t: "", "public-key is missing"),
    (
        "overlong line",
        _replace("metadata\n", 'metadata\n    note = "' + "x" * 250 + '"\n'),
        "line 5: the line is 263 bytes long",
    ),
    ("overlong comment", lambda t: "#" * 300 + "\n" + t, "line 1: the line is 300 bytes"),
    ("indented section", _replace("\nmetadata\n", "\n  metadata\n"), "must not be indented"),
    (
        "indented curve line",
        _replace("\ncurve\n", "\n\tcurve\n"),
        "line 7: the section line 'curve' must not be indented",
    ),
    ("unindented pair", _replace('    name = "', 'name = "'), "must be indented"),
    ("stray word", _replace("metadata\n", "metadata\nbogus\n"), "'bogus' is not a section"),
    ("pasted bare key", _replace(f'    secret-key = "{SECRET}"', SECRET), "line 9: this line is"),
    ("a bare key as the certificate", lambda t: SECRET, "line 1: this line is not a section"),
    ("pair before section", _replace("metadata\n", ""), "before any 'metadata' or 'curve'"),
    ("bad key chars", _replace("keygen.hostname", "keygen_hostname"), "'keygen_hostname'"),
    ("no key", _replace('    name = "', '    = "'), "a key is missing"),
    ("no equals", _replace('    name = "flux-sample"', "    name"), 'expected key = "value"'),
    ("bad value chars", _replace('"flux-sample"', '"flux,sample"'), "contains ','"),
    ("quote in value", _replace('"flux-sample"', '"flux"sample"'), "contains '\"'"),
    ("duplicate metadata", _replace("metadata\n", 'metadata\n    name = "x"\n'), "given twice"),
    ("duplicate key", _replace("curve\n", f'curve\n    public-key = "{PUBLIC}"\n'), "twice"),
]


@pytest.mark.parametrize(("mutate", "fragment"), [pytest.param(m, f, id=i) for i, m, f in BROKEN])
def test_broken_certificates_are_refused_with_an_actionable_reason(
    mutate: Callable[[str], str], fragment: str
) -> None:
    with pytest.raises(CertificateError) as excinfo:
        parse(mutate(VALID))
    message = str(excinfo.value)
    assert fragment in message
    assert SECRET[:20] not in message


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda t: t.replace("    ", "\t"), id="tab indents"),
        pytest.param(lambda t: t.replace("\n", "\r\n"), id="CRLF"),
        pytest.param(lambda t: t.split("\n\n", 1)[1], id="no header"),
        pytest.param(lambda t: t.replace(" = ", "="), id="no spaces around ="),
        pytest.param(lambda t: t.replace('"\n', '"   \n'), id="trailing blanks"),
        pytest.param(lambda t: t.rstrip("\n"), id="no final newline"),
        pytest.param(lambda t: t.replace("curve\n", "\n  # comment\ncurve\n"), id="comments"),
        pytest.param(
            lambda t: "#   ****  Generated on 2026-11-21 22:23:54 by CZMQ  ****\n" + t,
            id="CZMQ header",
        ),
    ],
)
def test_layouts_flux_accepts_are_accepted(mutate: Callable[[str], str]) -> None:
    cert = parse(mutate(VALID))
    assert (cert.public_key, cert.secret_key) == (PUBLIC, SECRET)
    assert cert.hostname == "flux-sample-0"


def test_metadata_section_is_optional_and_values_may_hold_spaces() -> None:
    text = f'curve\n    public-key = "{PUBLIC}"\n    secret-key = "{SECRET}"\n'
    assert parse(text).metadata == ()
    spaced = VALID.replace('"flux-sample"', '"my cluster (test) @ site"')
    assert parse(spaced).name == "my cluster (test) @ site"


def test_the_flux_operator_sample_certificate_parses() -> None:
    if not OPERATOR_SAMPLE.is_file():
        pytest.skip(f"shared compatibility fixtures not present at {OPERATOR_SAMPLE}")
    spec = yaml.safe_load(OPERATOR_SAMPLE.read_text())
    cert = parse(spec["spec"]["flux"]["curveCert"])
    assert cert.name == "flux-cert-generator"
    assert cert.hostname == "flux-sample-0"
    assert cert.public_key == "}D{Y3<amLLl*TIt>@b*umPD-nBr#I}[PnV!lZBkW"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_write_creates_a_0600_file_even_over_a_readable_one(tmp_path: Path) -> None:
    target = tmp_path / "curve.cert"
    target.write_text("old")
    target.chmod(0o644)
    cert = parse(VALID)
    old_umask = os.umask(0)
    try:
        write(cert, target)
    finally:
        os.umask(old_umask)
    assert _mode(target) == 0o600
    assert target.read_text() == VALID
    assert [p.name for p in tmp_path.iterdir()] == ["curve.cert"]  # no temporary left behind


def _keygen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flux_minicluster.core.keygen", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_keygen_command_prints_exactly_a_certificate() -> None:
    done = _keygen("--name", "flux-sample", "--hostname", "flux-sample-0")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    cert = parse(done.stdout)
    assert done.stdout == render(cert)
    assert (cert.name, cert.hostname) == ("flux-sample", "flux-sample-0")


def test_keygen_command_writes_a_0600_file_and_prints_nothing(tmp_path: Path) -> None:
    target = tmp_path / "curve.cert"
    done = _keygen("--name", "n", "--hostname", "n-0", "--output", str(target))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert _mode(target) == 0o600
    assert parse(target.read_text()).hostname == "n-0"


@pytest.mark.parametrize(
    ("args", "status", "fragment"),
    [
        (["--name", "n"], 2, "required: --hostname"),
        (["--name", "n", "--hostname", "h", "--bogus"], 2, "unrecognized arguments"),
        (["--name", "a,b", "--hostname", "h"], 2, "contains ','"),
        (["--name", "n", "--hostname", ""], 2, "must not be empty"),
        (["--name", "n", "--hostname", "h", "--output", "/nonexistent/dir/c"], 1, "cannot write"),
    ],
)
def test_keygen_command_errors_are_one_line(args: list[str], status: int, fragment: str) -> None:
    done = _keygen(*args)
    assert done.returncode == status
    assert done.stdout == ""
    assert fragment in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_validate_path_does_not_import_zmq() -> None:
    code = "import sys, flux_minicluster.core.flux.certificate; print('zmq' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


# --- a real CURVE handshake on 127.0.0.1 --------------------------------------------------------


@pytest.fixture
def context() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    try:
        yield ctx
    finally:
        ctx.destroy(linger=0)


def test_shared_certificate_carries_a_message_over_curve(
    context: zmq.Context[zmq.Socket[bytes]],
) -> None:
    shared = parse(render(generate("flux-sample", "flux-sample-0")))
    assert exchange(context, shared, shared, shared.public_key) == b"hello-flux-ack"


def test_client_with_the_wrong_server_key_gets_nothing(
    context: zmq.Context[zmq.Socket[bytes]],
) -> None:
    shared = parse(render(generate("flux-sample", "flux-sample-0")))
    stranger = generate("other", "other-0")
    assert exchange(context, shared, shared, stranger.public_key) is None
