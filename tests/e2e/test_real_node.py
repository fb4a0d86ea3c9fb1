"""One real node runs pods: the real kubelet with Debian's containerd and runc, the CNI bridge,
kube-proxy, CoreDNS and kube-router's NetworkPolicy controller (tests/e2e/realnode), from the
image tests/e2e/realnode/toolchain.py built. What users meet on any cluster: `kubectl logs` reads
the container's output through the kubelet, `kubectl exec` runs a command in it (its exit code
comes back), a pod's `<hostname>.<subdomain>` name resolves through a headless Service, and a
NetworkPolicy closes a port that was open.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import yaml

IMAGE = "localhost/debian:bookworm"
# bash's /dev/tcp (busybox wget crashes on names in this image); exit 0 when it connected
CONNECT = "timeout 2 bash -c 'exec 3<>/dev/tcp/web.sub/8080'"


def pod(name: str, command: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": IMAGE,
                    "imagePullPolicy": "Never",
                    "command": ["/bin/sh", "-c", command],
                }
            ],
            **spec,
        },
    }


def until(
    what: str,
    predicate: Callable[[], bool],
    details: Callable[[], str] = str,
    timeout: float = 60,
) -> float:
    """Seconds until ``predicate`` holds (polled every 0.2 s); fails after ``timeout``."""
    t0 = time.monotonic()
    while not predicate():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"{what}: not within {timeout:.0f}s\n{details()}")
        time.sleep(0.2)
    return time.monotonic() - t0


def test_a_pod_on_a_real_node_logs_execs_resolves_and_is_policed(
    real_cluster: Any, e2e_report: Callable[[str], None]
) -> None:
    rc = real_cluster
    headless = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "sub"},
        "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 8080}]},
    }
    web = pod(
        "web",
        "echo hello from $(hostname -f); mkdir /w; exec busybox httpd -f -p 8080 -h /w",
        {"app": "web"},
        hostname="web",
        subdomain="sub",
    )
    probe = pod("probe", "exec sleep 3600", {"app": "probe"})
    t0 = time.monotonic()
    rc.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([headless, web, probe]))
    rc.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=90s", timeout=100)
    ready_s = time.monotonic() - t0
    from_nothing_s = time.monotonic() - rc.started_at
    rc.kubectl("wait", "--for=condition=Ready", "pod/probe", "--timeout=90s", timeout=100)

    logs = rc.kubectl("logs", "pod/web").stdout
    assert logs.strip() == "hello from web.sub.default.svc.cluster.local"

    done = rc.kubectl("exec", "web", "--", "sh", "-c", "echo $((6 * 7)); exit 3", check=False)
    assert (done.returncode, done.stdout.strip()) == (3, "42")
    # the image's own files, not the host's: the root file system is the image
    assert "bookworm" in rc.kubectl("exec", "web", "--", "cat", "/etc/os-release").stdout

    answers: dict[str, str] = {}  # the last answer to each name, for a failure's message

    def lookup(name: str) -> list[str]:
        res = rc.kubectl("exec", "probe", "--", "getent", "hosts", name, check=False)
        answers[name] = f"exit {res.returncode}: {res.stdout.strip()} {res.stderr.strip()}"
        return res.stdout.split()[:1]

    ip = rc.kubectl("get", "pod/web", "-o", "jsonpath={.status.podIP}").stdout
    # CoreDNS answers for the pod's name once the Service selects it (search path: web.sub)
    dns_s = until(
        "web.sub resolves",
        lambda: lookup("web.sub") == [ip],
        lambda: f"{answers}\n{rc.diagnostics()}",
    )
    assert lookup("web.sub.default.svc.cluster.local") == [ip]
    # the API server through the `kubernetes` Service (kube-proxy's ClusterIP rules)
    assert lookup("kubernetes.default") == ["10.96.0.1"]
    assert lookup("no-such-name.example") == []

    def connects() -> bool:
        return rc.kubectl("exec", "probe", "--", "sh", "-c", CONNECT, check=False).returncode == 0

    assert connects()
    deny = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "deny-web"},
        "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Ingress"]},
    }
    rc.kubectl("apply", "-f", "-", input=yaml.safe_dump(deny))
    enforced_s = until("the NetworkPolicy closes web:8080", lambda: not connects())
    rc.kubectl("delete", "networkpolicy", "deny-web")
    until("web:8080 open again", connects)

    e2e_report(
        f"real node: from nothing to the first pod Ready {from_nothing_s:.1f}s "
        f"(pod Ready {ready_s:.1f}s after apply), its name resolvable {dns_s:.1f}s later, "
        f"a NetworkPolicy enforced {enforced_s:.1f}s after apply"
    )
    e2e_report("real cluster start: " + ", ".join(f"{k} {v:.1f}s" for k, v in rc.timings.items()))
    e2e_report("resident MB: " + ", ".join(f"{k} {v:.0f}" for k, v in rc.memory().items()))
