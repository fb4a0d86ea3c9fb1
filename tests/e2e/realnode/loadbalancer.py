"""The cloud's load balancer for a real-node cluster: what a cloud controller manager and its load
balancer do for a Service of type LoadBalancer, on the fabric the clusters share (the host).

A cloud gives the Service an address (``status.loadBalancer.ingress``), and its load balancer
sends what reaches that address to a node that passes its health check; kube-proxy on that node
owns the rest (it programs the ingress address: the ``loadBalancerSourceRanges`` firewall, then
DNAT to the endpoint). Here:

- the address: 10.249.K.(10+n), the n-th LoadBalancer Service of cluster K, written to the
  Service's status as a cloud controller does;
- the load balancer: a host route to that address via a node's eth0. With
  ``externalTrafficPolicy: Local`` only nodes holding an endpoint answer (kube-proxy drops the
  rest, and a cloud's health check on ``healthCheckNodePort`` fails there), so the route follows
  the node of the Service's first endpoint, re-read every ``INTERVAL`` s; with ``Cluster`` any
  node does. Packets reach the node with their source untouched: a passthrough load balancer
  (GKE's and AKS's, an AWS NLB with client IP preservation on);
- the annotation ``e2e.flux-minicluster.dev/load-balancer-source: rewrite`` makes it a proxying
  load balancer instead (an NLB with IP targets and preservation off): the host rewrites the
  source of what it forwards to the address into the load balancer's own address in the nodes'
  subnet (the cluster's gateway, 10.250.K.1), so the pods see the load balancer, never the
  client. Once set, the rewrite stays for the cluster's life (the tests never take it back).

Everything it adds lives in the cluster's bridge (routes go with it) and in one nat chain,
``FMRNLB<K>``, which :func:`remove` deletes (the cluster's teardown calls it).
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from typing import Any, Protocol

REWRITE = "e2e.flux-minicluster.dev/load-balancer-source"
INTERVAL = 0.5


class Cluster(Protocol):
    k: int

    @property
    def gateway(self) -> str: ...

    def node_ips(self) -> dict[str, str]: ...

    def api_items(self, path: str, selector: str | None = None) -> list[Any]: ...

    def patch_status(self, namespace: str, name: str, body: dict[str, Any]) -> None: ...


def chain(k: int) -> str:
    return f"FMRNLB{k}"


def _ipt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["iptables", "-w", *args], capture_output=True, text=True, timeout=30)


def remove(k: int) -> None:
    """Drop cluster ``k``'s nat chain from the host (routes go with its bridge)."""
    while _ipt("-t", "nat", "-D", "POSTROUTING", "-j", chain(k)).returncode == 0:
        pass
    _ipt("-t", "nat", "-F", chain(k))
    _ipt("-t", "nat", "-X", chain(k))


class LoadBalancers:
    """A thread that keeps cluster ``k``'s LoadBalancer Services addressed and routed."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.k = cluster.k
        self.addresses: dict[tuple[str, str], str] = {}  # (namespace, name) -> address
        self.routes: dict[str, str] = {}  # address -> node IP
        self.rewritten: set[str] = set()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lb-{self.k}", daemon=True)

    def start(self) -> LoadBalancers:
        remove(self.k)
        _ipt("-t", "nat", "-N", chain(self.k))
        _ipt("-t", "nat", "-I", "POSTROUTING", "-j", chain(self.k))
        self._thread.start()
        return self

    def stop(self) -> None:
        # the thread ends after the sync under way (its calls are bounded by their timeouts):
        # only then is nothing left to add a rule to the chain removed here
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        remove(self.k)

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL):
            try:
                self.sync()
            except Exception as exc:
                self.errors = [*self.errors[-4:], f"{type(exc).__name__}: {exc}"]

    def sync(self) -> None:
        services = [
            s
            for s in self.cluster.api_items("/api/v1/services")
            if s["spec"].get("type") == "LoadBalancer"
        ]
        nodes = self.cluster.node_ips()
        for svc in services:
            meta = svc["metadata"]
            key = (meta["namespace"], meta["name"])
            address = self.addresses.get(key)
            if address is None:
                address = f"10.249.{self.k}.{10 + len(self.addresses)}"
                self.addresses[key] = address
            ingress = svc.get("status", {}).get("loadBalancer", {}).get("ingress") or []
            if [i.get("ip") for i in ingress] != [address]:
                status = {"loadBalancer": {"ingress": [{"ip": address, "ipMode": "VIP"}]}}
                self.cluster.patch_status(key[0], key[1], {"status": status})
            target = self._target(svc, nodes)
            if target and self.routes.get(address) != target:
                subprocess.run(
                    ["ip", "route", "replace", f"{address}/32", "via", target],
                    check=True, capture_output=True, timeout=10,
                )  # fmt: skip
                self.routes[address] = target
            rewrite = (meta.get("annotations") or {}).get(REWRITE) == "rewrite"
            if rewrite and address not in self.rewritten:
                rule = ["-d", f"{address}/32", "-j", "SNAT", "--to-source", self.cluster.gateway]
                _ipt("-t", "nat", "-A", chain(self.k), *rule)
                self.rewritten.add(address)

    def _target(self, svc: dict[str, Any], nodes: dict[str, str]) -> str | None:
        """The node the load balancer sends to: the first endpoint's node under ``Local``
        (a cloud's health check passes only there), else the first node."""
        if svc["spec"].get("externalTrafficPolicy") != "Local":
            return next(iter(nodes.values()), None)
        meta = svc["metadata"]
        slices = self.cluster.api_items(
            f"/apis/discovery.k8s.io/v1/namespaces/{meta['namespace']}/endpointslices",
            f"kubernetes.io/service-name={meta['name']}",
        )
        for piece in slices:
            for endpoint in piece.get("endpoints") or []:
                with contextlib.suppress(KeyError):
                    return nodes[endpoint["nodeName"]]
        return None
