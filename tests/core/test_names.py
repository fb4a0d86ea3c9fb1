"""Names the API server would refuse must be refused first, with the rule spelled out."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from flux_minicluster.core.kube.names import (
    dns1035_label,
    dns1123_label,
    dns1123_subdomain,
    env_var_name,
    host_address,
    label_key,
    label_value,
    port,
    shell_variable,
)

Check = Callable[..., "str | None"]

CASES: list[tuple[Check, object, str | None]] = [
    # (check, value, fragment of the message, or None when the value is fine)
    (dns1035_label, "flux-sample", None),
    (dns1035_label, "1flux", "starting with a letter"),
    (dns1035_label, "a" * 64, "(it has 64 characters)"),
    (shell_variable, "FLUX_URI", None),
    (shell_variable, "_x1", None),
    (shell_variable, "MY-VAR", "shell variable name"),
    (shell_variable, "1X", "not starting with a digit"),
    (host_address, "34.120.1.2", None),
    (host_address, "lead.example.org", None),
    (host_address, "10.0.0.1,evil", "one IPv4 address or DNS name"),
    (host_address, "[::1]", "no port, comma, brackets"),
    (host_address, "host:8050", "no port"),
    (dns1123_label, "flux-sample", None),
    (dns1123_label, "a", None),
    (dns1123_label, "0abc9", None),
    (dns1123_label, "a" * 63, None),
    (dns1123_label, "a" * 64, "with a letter or digit (it has 64 characters)"),
    (dns1123_label, "", "must be a DNS-1123 label"),
    (dns1123_label, "Flux", "lowercase"),
    (dns1123_label, "-flux", "starting and ending with a letter or digit"),
    (dns1123_label, "flux-", "starting and ending"),
    (dns1123_label, "flux.sample", "must be a DNS-1123 label"),
    (dns1123_label, "flux_sample", "must be a DNS-1123 label"),
    (dns1123_label, "flux\n", "must be a DNS-1123 label"),
    (dns1123_subdomain, "flux-sample.default.svc", None),
    (dns1123_subdomain, "a", None),
    (dns1123_subdomain, ".".join(["a" * 63] * 4)[:253], None),
    (dns1123_subdomain, "a" * 254, "(it has 254 characters)"),
    (dns1123_subdomain, "", "must be a DNS-1123 subdomain"),
    (dns1123_subdomain, "a..b", "dot-separated parts"),
    (dns1123_subdomain, "a.-b", "must be a DNS-1123 subdomain"),
    (dns1123_subdomain, "A.b", "lowercase"),
    (label_value, "", None),
    (label_value, "flux-sample", None),
    (label_value, "Flux_Sample.v1", None),
    (label_value, "0", None),
    (label_value, "x" * 63, None),
    (label_value, "x" * 64, "(it has 64 characters)"),
    (label_value, "-x", "must be a label value: empty, or at most 63 letters"),
    (label_value, "x.", "starting and ending with a letter or digit"),
    (label_value, "a b", "must be a label value"),
    (label_value, "a/b", "must be a label value"),
    (label_key, "app", None),
    (label_key, "app.kubernetes.io/name", None),
    (label_key, "minicluster.flux-framework.org/cluster", None),
    (label_key, "batch.kubernetes.io/job-completion-index", None),
    (label_key, "Hpa_Selector.x", None),
    (label_key, "/name", "the prefix before '/' is empty"),
    (label_key, "a/b/c", "more than one '/'"),
    (label_key, "Example.com/name", "the prefix 'Example.com' is not a DNS-1123 subdomain"),
    (label_key, "example.com/", "the name part is empty"),
    (label_key, "", "the name part is empty"),
    (label_key, "example.com/" + "n" * 64, "(it has 64 characters)"),
    (label_key, "-name", "must be a label key"),
    (env_var_name, "FLUX_URI", None),
    (env_var_name, "my.env-name", None),
    (env_var_name, "_x1", None),
    (env_var_name, "", "must be an environment variable name"),
    (env_var_name, "1ABC", "not starting with a digit"),
    (env_var_name, "A=B", "must be an environment variable name"),
    (env_var_name, "A B", "must be an environment variable name"),
    (env_var_name, ".", "not '.', '..' or starting with '..'"),
    (env_var_name, "..", "not '.', '..'"),
    (env_var_name, "..x", "starting with '..'"),
    (port, 1, None),
    (port, 8050, None),
    (port, 65535, None),
    (port, 0, "an integer from 1 to 65535"),
    (port, 65536, "an integer from 1 to 65535"),
    (port, -1, "must be a port number"),
    (port, "8050", "must be a port number"),
    (port, True, "must be a port number"),
    (port, 80.0, "must be a port number"),
]


@pytest.mark.parametrize(
    ("check", "value", "fragment"),
    [pytest.param(c, v, f, id=f"{c.__name__}-{v!r:.30}") for c, v, f in CASES],
)
def test_name_rules_match_the_api_server(check: Check, value: object, fragment: str | None) -> None:
    message = check(value)
    if fragment is None:
        assert message is None
    else:
        assert message is not None
        assert fragment in message
