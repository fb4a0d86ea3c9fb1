"""The brokers' tree (Flux's ``tbon.topo``) when the spec names none: chosen from the size.

Every message between rank 0 and the other brokers (job events, a job's output, `flux
resource`, the KVS) travels the tree, and a broker's cost per message grows with the number of
children it talks to directly. The Flux Operator always passes ``-Stbon.fanout=256``: one flat
tree up to 257 brokers, where rank 0 talks to every broker itself, and a 256-wide one beyond.
Measured upstream at 1,536 brokers (flux-core#6806), job throughput follows the widest fanout of
the tree: 10.9 jobs/s flat (1,535 children), 20 to 24 at 512, 38 to 44 at about 300, 65 at 170,
83 at 139 and 95 at 128 (the last three with four ZeroMQ I/O threads at rank 0).

A flat tree has the one virtue a MiniCluster needs most: no broker but rank 0 is on the path of
another, so Kubernetes replacing any worker pod loses that broker alone. A tree's routers are
critical: losing one disconnects every broker under it. The operator's 256-wide tree above 257
brokers makes 256 of them critical. So the rule keeps the tree flat while rank 0 has at most
``MAX_FANOUT`` (256) children, as the operator does, and beyond that adds as few routers as keep
every fanout within it, the way Flux's own ``mincrit`` chooses its routers (with a limit of
1,024): the operator's widest fanout with a handful of critical brokers (1,536 brokers:
``mincrit:6``, 7 critical, against 257). Measured here (benchmarks/tree.py, 256 brokers of one
machine of two cores), a 128-wide tree ran short jobs no faster than the flat one (7.9 against
8.3 jobs/s), so nothing narrower than the operator's is chosen.

``tbon.zmq_io_threads`` (rank 0's ZeroMQ I/O threads, 1 by default) is left to Flux: raising it
measured from 0.7x to 1.3x upstream depending on the tree, and nothing here measured it better.

One owner: the renderer passes :func:`for_size`'s topology to every broker; the spec's
``flux.topology`` wins when set, and a bursting group keeps the operator's fanout, since its
clusters must all name the same tree and a burst learns the group's size only at deploy.
"""

from __future__ import annotations

from typing import Final

__all__ = ["FLAT", "MAX_FANOUT", "for_size", "routers", "widest_fanout"]

MAX_FANOUT: Final = 256
"""The most children any broker has in a chosen tree (rank 0 alone up to this many)."""
FLAT: Final = "kary:0"
"""Flux's flat tree: rank 0 is every other broker's parent."""


def routers(brokers: int, max_fanout: int = MAX_FANOUT) -> int:
    """How many routers keep every router's leaves within ``max_fanout``: 0 while rank 0 can
    hold every other broker; never 1 (one router only moves rank 0's load to rank 1). Flux's
    ``mincrit_choose_k`` with a limit of its own."""
    if brokers <= max_fanout + 1:
        return 0
    k = 2
    while _router_fanout(brokers, k) > max_fanout:
        k += 1
    return k


def _router_fanout(brokers: int, k: int) -> int:
    leaves = brokers - 1 - k
    return -(-leaves // k)


def widest_fanout(brokers: int, topology: str) -> int:
    """The most children a broker has under ``topology`` (``kary:<k>`` or ``mincrit:<k>``)."""
    scheme, _, value = topology.partition(":")
    k = int(value or 0)
    if k == 0:
        return max(0, brokers - 1)
    if scheme == "kary":
        return min(k, brokers - 1)
    return max(k, _router_fanout(brokers, k))


def for_size(brokers: int) -> str:
    """The ``tbon.topo`` for an instance of ``brokers`` brokers: flat, or ``mincrit:<k>``."""
    k = routers(brokers)
    return FLAT if k == 0 else f"mincrit:{k}"
