#!/usr/bin/python3
"""dnscheck.py --queries COUNT FILE - writes the queries for those names in
dnsperf's binary input format (dnsperf -B: each message preceded by its
length), with RD set: dnsperf's text input sends queries without RD, which
a resolver answers from its cache only, or not at all.

dnscheck.py PORT COUNT - asks 127.0.0.1:PORT for the A record of
h0.example.test. .. h{COUNT-1}.example.test., one UDP query at a time, and
checks each answer is NOERROR with the one address soak-unbound.sh's zone
gives it (10.0.i/250.i%250).  Prints "answers ok N" or the first wrong
answers and exits 1; 2 when the server does not answer at all.
Standard library only; loopback only."""
import socket
import struct
import sys


def query(name, qid):
    header = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)  # RD
    qname = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".") if p) + b"\0"
    return header + qname + struct.pack(">HH", 1, 1)  # A, IN


def skip_name(msg, at):
    while True:
        length = msg[at]
        if length == 0:
            return at + 1
        if length & 0xC0 == 0xC0:
            return at + 2
        at += 1 + length


def a_records(msg, qid):
    rid, flags, qd, an, _, _ = struct.unpack(">HHHHHH", msg[:12])
    if rid != qid:
        raise ValueError("id %d, not %d" % (rid, qid))
    rcode = flags & 0xF
    at = 12
    for _ in range(qd):
        at = skip_name(msg, at) + 4
    addresses = []
    for _ in range(an):
        at = skip_name(msg, at)
        rtype, _, _, rdlength = struct.unpack(">HHIH", msg[at:at + 10])
        at += 10
        if rtype == 1 and rdlength == 4:
            addresses.append(".".join(str(b) for b in msg[at:at + 4]))
        at += rdlength
    return rcode, addresses


def write_queries(count, path):
    with open(path, "wb") as f:
        for i in range(count):
            message = query("h%d.example.test." % i, 0)
            f.write(struct.pack(">H", len(message)) + message)
    return 0


def main():
    if sys.argv[1] == "--queries":
        return write_queries(int(sys.argv[2]), sys.argv[3])
    port, count = int(sys.argv[1]), int(sys.argv[2])
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(2.0)
    wrong = []
    answered = 0
    for i in range(count):
        name = "h%d.example.test." % i
        want = "10.0.%d.%d" % (i // 250, i % 250)
        qid = (i * 7919 + 1) & 0xFFFF
        got = None
        for _ in range(3):  # UDP: a lost datagram is retried, not an error
            sock.sendto(query(name, qid), ("127.0.0.1", port))
            try:
                while True:
                    msg, _ = sock.recvfrom(4096)
                    if msg[:2] == struct.pack(">H", qid):
                        break
                got = a_records(msg, qid)
                break
            except socket.timeout:
                continue
        if got is None:
            wrong.append("%s: no answer" % name)
            continue
        answered += 1
        if got != (0, [want]):
            wrong.append("%s: rcode %d, %s; expected NOERROR, %s" % (name, got[0], got[1], want))
    if answered == 0:
        print("no answer from 127.0.0.1:%d" % port)
        return 2
    if wrong:
        print("%d wrong answers of %d, first: %s" % (len(wrong), count, "; ".join(wrong[:5])))
        return 1
    print("answers ok %d" % count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
