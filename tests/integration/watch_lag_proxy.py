# SPDX-License-Identifier: Apache-2.0
"""A loopback HTTPS proxy before the test API server that makes every watch lag behind.

Test code (tests/integration/gate.sh, case `stale`): the controller talks to this proxy as if it
were the API server. Each request goes upstream on its own TLS connection with
`Connection: close` (one request per connection, so a response ends when upstream closes);
answers to watch requests (`watch=true`/`watch=1` in the query) reach the controller LAG seconds
after the API server sent them, everything else at once. So a write's answer arrives long before
the watch event that shows the write: the window in which a pass would act on a stale cache.

usage: watch_lag_proxy.py LAG_SECONDS UPSTREAM_HOST:PORT CA CLIENT_CERT CLIENT_KEY SERVER_CERT SERVER_KEY
Prints the port it listens on (127.0.0.1), then serves until killed. Bounded: at most 256
connections at once, each thread ends with its connection.
"""
import socket
import ssl
import sys
import threading
import time
from collections import deque

LAG = float(sys.argv[1])
UP_HOST, UP_PORT = sys.argv[2].rsplit(":", 1)
UP_PORT = int(UP_PORT)
up_ctx = ssl.create_default_context(cafile=sys.argv[3])
up_ctx.load_cert_chain(sys.argv[4], sys.argv[5])
up_ctx.check_hostname = False
srv_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
srv_ctx.load_cert_chain(sys.argv[6], sys.argv[7])
slots = threading.BoundedSemaphore(256)


def read_head(sock):
    """Reads up to the end of the HTTP head; returns (head bytes, what followed it)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None, b""
        buf += chunk
        if len(buf) > 1 << 20:
            return None, b""
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head, rest


def with_close(head):
    """The head with any Connection header replaced by `Connection: close`."""
    lines = [l for l in head.split(b"\r\n") if not l.lower().startswith(b"connection:")]
    lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n"


def lagged_copy(src, dst, lag):
    """Copies src to dst until src ends; each chunk leaves `lag` seconds after it arrived."""
    q = deque()
    cond = threading.Condition()
    done = []

    def reader():
        try:
            while True:
                chunk = src.recv(65536)
                if not chunk:
                    break
                with cond:
                    q.append((time.monotonic() + lag, chunk))
                    cond.notify()
        except OSError:
            pass
        with cond:
            done.append(True)
            cond.notify()

    threading.Thread(target=reader, daemon=True).start()
    while True:
        with cond:
            while not q and not done:
                cond.wait()
            if not q and done:
                return
            due, chunk = q.popleft()
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        try:
            dst.sendall(chunk)
        except OSError:
            return


def serve(client):
    try:
        tls = srv_ctx.wrap_socket(client, server_side=True)
        head, rest = read_head(tls)
        if head is None:
            return
        request_line = head.split(b"\r\n", 1)[0]
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        body = rest
        while len(body) < length:
            chunk = tls.recv(65536)
            if not chunk:
                return
            body += chunk
        up = up_ctx.wrap_socket(socket.create_connection((UP_HOST, UP_PORT)), server_hostname=UP_HOST)
        up.sendall(with_close(head) + body)
        target = request_line.split(b" ")[1] if b" " in request_line else b""
        lag = LAG if b"watch=true" in target or b"watch=1" in target else 0
        resp_head, resp_rest = read_head(up)
        if resp_head is None:
            return
        # a watch's head comes late too: the whole stream lags
        time.sleep(lag)
        tls.sendall(with_close(resp_head) + resp_rest)
        lagged_copy(up, tls, lag)
        up.close()
    except (OSError, ssl.SSLError, ValueError):
        pass
    finally:
        client.close()
        slots.release()


lis = socket.socket()
lis.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lis.bind(("127.0.0.1", 0))
lis.listen(64)
print(lis.getsockname()[1], flush=True)
while True:
    c, _ = lis.accept()
    slots.acquire()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
