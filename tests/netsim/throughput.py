#!/usr/bin/env python3
"""TCP goodput between simulated hosts (tests/netsim/netsim_smoke.sh).

  throughput.py serve --bind ADDR --port P [--conns K] [--timeout S]
      Accepts K connections (concurrently), reads each until EOF, then prints
      one line: "bytes=B seconds=T MBps=R" -- the aggregate goodput, from the
      first byte received on any connection to the last EOF.  Exits 1 when
      fewer than K connections arrive or data stops for S seconds.
  throughput.py send --to ADDR --port P --bytes B [--retry-for S]
      Connects (retrying while the server is not listening yet), sends B
      bytes, closes.  Prints "sent=B".

Only the standard library: it runs wherever python3 does.
"""
import argparse
import socket
import sys
import threading
import time

CHUNK = 1 << 16


def serve(args):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((args.bind, args.port))
    listener.listen(args.conns)
    listener.settimeout(args.timeout)

    lock = threading.Lock()
    first = [None]
    first_len = [0]
    last = [None]
    total = [0]
    errors = []

    def drain(conn):
        conn.settimeout(args.timeout)
        try:
            while True:
                data = conn.recv(CHUNK)
                now = time.monotonic()
                with lock:
                    if data and first[0] is None:
                        first[0] = now
                        first_len[0] = len(data)
                    if not data:
                        last[0] = now if last[0] is None else max(last[0], now)
                        return
                    total[0] += len(data)
        except OSError as e:  # includes socket.timeout
            errors.append(str(e))
        finally:
            conn.close()

    threads = []
    try:
        for _ in range(args.conns):
            conn, _ = listener.accept()
            t = threading.Thread(target=drain, args=(conn,))
            t.start()
            threads.append(t)
    except OSError as e:
        print(f"serve: only {len(threads)} of {args.conns} connection(s) arrived: {e}", file=sys.stderr)
        return 1
    finally:
        listener.close()
    for t in threads:
        t.join()
    if errors:
        print(f"serve: receive failed: {errors[0]}", file=sys.stderr)
        return 1
    if first[0] is None:
        print("bytes=0 seconds=0 MBps=0")
        return 0
    # The clock starts when the first chunk has arrived, so that chunk is not
    # part of the measured interval.  (A tiny transfer arrives in one recv:
    # no measurable interval, rate 0.)
    seconds = max(last[0] - first[0], 1e-9)
    rate = (total[0] - first_len[0]) / seconds
    print(f"bytes={total[0]} seconds={seconds:.6f} MBps={rate / 1e6:.3f}")
    return 0


def send(args):
    deadline = time.monotonic() + args.retry_for
    while True:
        try:
            sock = socket.create_connection((args.to, args.port), timeout=5)
            break
        except OSError as e:
            if time.monotonic() >= deadline:
                print(f"send: cannot connect to {args.to}:{args.port}: {e}", file=sys.stderr)
                return 1
            time.sleep(0.05)
    sock.settimeout(30)
    payload = b"\x5a" * CHUNK
    left = args.bytes
    while left > 0:
        n = min(left, CHUNK)
        sock.sendall(payload[:n])
        left -= n
    sock.shutdown(socket.SHUT_WR)
    # Wait for the server's close, so "sent" means "received" too.
    sock.recv(1)
    sock.close()
    print(f"sent={args.bytes}")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--bind", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--conns", type=int, default=1)
    s.add_argument("--timeout", type=float, default=15.0)
    c = sub.add_parser("send")
    c.add_argument("--to", required=True)
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--bytes", type=int, required=True)
    c.add_argument("--retry-for", type=float, default=10.0)
    args = p.parse_args()
    return serve(args) if args.cmd == "serve" else send(args)


if __name__ == "__main__":
    sys.exit(main())
