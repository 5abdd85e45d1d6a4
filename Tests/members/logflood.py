"""Connections a stranger can make at will, from many loopback addresses, for MemberTests'
log-cap test: join requests without a certificate (each with a real P-256 key and a made-up
proof, so the node looks for the invite and refuses it), or connections with the certificate of
another cluster (refused at the TLS handshake).

    logflood.py join PORT COUNT ADDRESSES
    logflood.py foreign PORT COUNT ADDRESSES NODE_PEM

Connection i comes from 127.0.0.(2 + i % ADDRESSES). Prints how many connections were made.
Every loop is bounded in count, and every socket in time."""
import os, socket, ssl, struct, subprocess, sys, tempfile


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def data(b):
    return varint(len(b)) + b


def join_frame():
    # A P-256 public key (DER SubjectPublicKeyInfo), as a joining machine makes.
    key = subprocess.run(
        "openssl ecparam -name prime256v1 -genkey | openssl ec -pubout -outform DER",
        shell=True, capture_output=True, check=True).stdout
    payload = bytes([9]) + b"LNSY" + data(b"flood") + data(key) + data(os.urandom(32))
    return struct.pack(">I", len(payload)) + payload


def context(cert=None):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    if cert:
        ctx.load_cert_chain(cert)
    return ctx


def main():
    mode, port, count, addresses = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    ctx = context(sys.argv[5] if mode == "foreign" else None)
    frame = join_frame() if mode == "join" else b""
    made = 0
    for i in range(count):
        source = f"127.0.0.{2 + i % addresses}"
        try:
            raw = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
        except OSError:
            continue
        made += 1
        try:
            s = ctx.wrap_socket(raw)
            if frame:
                s.sendall(frame)
                s.recv(4096)
            s.close()
        except (OSError, ssl.SSLError):
            raw.close()
    print(made)


main()
