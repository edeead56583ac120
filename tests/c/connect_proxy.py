#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Test-only forward proxy for test_kubecred: HTTP CONNECT and SOCKS5 (no auth) on one port.
Every tunnel goes to 127.0.0.1 at the port asked for, whatever the host name (so a name that
does not resolve still reaches the fake API server). Each request is appended to LOGFILE as
"CONNECT host:port" or "SOCKS5 host:port". Usage: connect_proxy.py LOGFILE; prints the port
on stdout and exits by itself after 120 s."""
import socket
import struct
import sys
import threading


def relay(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def recv_exact(c, n):
    b = b""
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d:
            raise OSError("eof")
        b += d
    return b


def handle(c, logfile):
    try:
        first = recv_exact(c, 1)
        if first == b"\x05":                       # SOCKS5 (RFC 1928)
            n = recv_exact(c, 1)[0]
            recv_exact(c, n)
            c.sendall(b"\x05\x00")
            ver, cmd, _, atyp = recv_exact(c, 4)
            if atyp == 3:
                host = recv_exact(c, recv_exact(c, 1)[0]).decode()
            elif atyp == 1:
                host = socket.inet_ntoa(recv_exact(c, 4))
            else:
                host = socket.inet_ntop(socket.AF_INET6, recv_exact(c, 16))
            port = struct.unpack(">H", recv_exact(c, 2))[0]
            kind = "SOCKS5"
        else:                                       # HTTP CONNECT
            head = first
            while b"\r\n\r\n" not in head:
                head += recv_exact(c, 1)
            line = head.split(b"\r\n")[0].decode()
            verb, target = line.split(" ")[:2]
            if verb != "CONNECT":
                c.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                return
            host, port = target.rsplit(":", 1)
            port = int(port)
            kind = "CONNECT"
        with open(logfile, "a") as f:
            f.write("%s %s:%d\n" % (kind, host, port))
        up = socket.create_connection(("127.0.0.1", port))
        if kind == "SOCKS5":
            c.sendall(b"\x05\x00\x00\x01\x7f\x00\x00\x01" + struct.pack(">H", port))
        else:
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        threading.Thread(target=relay, args=(up, c), daemon=True).start()
        relay(c, up)
    except OSError:
        c.close()


def main():
    logfile = sys.argv[1]
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    sys.stdout.write("%d\n" % srv.getsockname()[1])
    sys.stdout.flush()
    threading.Timer(120, lambda: __import__("os")._exit(0)).start()
    while True:
        c, _ = srv.accept()
        threading.Thread(target=handle, args=(c, logfile), daemon=True).start()


if __name__ == "__main__":
    main()
