"""One real CURVE handshake on 127.0.0.1 with pyzmq: whether a certificate lets a client and a
server that hold it talk. Shared by the certificate's tests and the keygen Command's e2e."""

from __future__ import annotations

import zmq

from flux_minicluster.core.flux.certificate import CurveCertificate

POLL_MS = 1500


def exchange(
    ctx: zmq.Context[zmq.Socket[bytes]],
    server_cert: CurveCertificate,
    client_cert: CurveCertificate,
    server_key_for_client: str,
    poll_ms: int = POLL_MS,
) -> bytes | None:
    """Send one message client -> server -> client; None if either leg never arrives within
    ``poll_ms``."""
    server = ctx.socket(zmq.ROUTER)
    client = ctx.socket(zmq.DEALER)
    try:
        for sock in (server, client):
            sock.linger = 0
        server.curve_server = True
        server.curve_publickey = server_cert.public_key.encode()
        server.curve_secretkey = server_cert.secret_key.encode()
        port = server.bind_to_random_port("tcp://127.0.0.1")
        client.curve_publickey = client_cert.public_key.encode()
        client.curve_secretkey = client_cert.secret_key.encode()
        client.curve_serverkey = server_key_for_client.encode()
        client.connect(f"tcp://127.0.0.1:{port}")
        client.send(b"hello-flux")
        if not server.poll(poll_ms):
            return None
        identity, payload = server.recv_multipart()
        server.send_multipart([identity, payload + b"-ack"])
        if not client.poll(poll_ms):
            return None
        reply: bytes = client.recv()
        return reply
    finally:
        server.close(linger=0)
        client.close(linger=0)
