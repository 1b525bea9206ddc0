#!/usr/bin/env python3
"""A fake Web Push service (RFC 8030) for tests/integration/test_push.sh.

It plays the browser's side too: GET /new/<name> makes a subscription (a P-256 key pair and an
auth secret it keeps) and answers the PushSubscription JSON a page would POST to agent-daemon,
its endpoint http://127.0.0.1:<port>/push/<name>. Every POST /push/<name> is checked as a real
push service and browser would: the VAPID Authorization (RFC 8292: "vapid t=<JWT>, k=<key>", the
JWT ES256-signed by k, aud this origin, exp in the future and at most 24 h away), TTL and
Content-Encoding: aes128gcm; then the body is DECRYPTED with the subscription's private key and
auth secret (RFC 8291, RFC 8188). Each push is recorded, good or not; GET /log answers them all
as a JSON array of {"name", "ok", "error", "message" (the decrypted JSON), "ttl", "urgency",
"topic", "vapidKey", "status"}. POST /answer/<name>/<status> makes later pushes to that
subscription answer status (e.g. 410: the subscription is gone). Binds 127.0.0.1 only.
"""

import argparse
import base64
import json
import os
import sys
import threading
import time

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakehttp  # noqa: E402

BODY_MAX = 8192
JWT_MAX_LIFETIME = 24 * 3600

LOCK = threading.Lock()
SUBS = {}     # name -> {"key": private key, "auth": bytes, "status": int}
LOG = []


def b64d(s):
    if isinstance(s, str):
        s = s.encode()
    return base64.urlsafe_b64decode(s + b"=" * (-len(s) % 4))


def b64e(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def hkdf(salt, ikm, info, n):
    return HKDF(algorithm=hashes.SHA256(), length=n, salt=salt, info=info).derive(ikm)


def point(key):
    return key.public_key().public_bytes(serialization.Encoding.X962,
                                         serialization.PublicFormat.UncompressedPoint)


def check_vapid(header, origin):
    """The VAPID key (base64url) of a valid Authorization header; raises ValueError otherwise."""
    if not header or not header.startswith("vapid "):
        raise ValueError("no vapid Authorization")
    parts = dict(p.strip().split("=", 1) for p in header[6:].split(","))
    token, k = parts.get("t"), parts.get("k")
    if not token or not k:
        raise ValueError("vapid without t= or k=")
    pub = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64d(k))
    h64, c64, s64 = token.split(".")
    head, claims, sig = json.loads(b64d(h64)), json.loads(b64d(c64)), b64d(s64)
    if head.get("alg") != "ES256" or len(sig) != 64:
        raise ValueError("not an ES256 JWT: %r" % head)
    der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
    try:
        pub.verify(der, (h64 + "." + c64).encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise ValueError("the JWT's signature does not verify with k=")
    if claims.get("aud") != origin:
        raise ValueError("aud %r is not %r" % (claims.get("aud"), origin))
    exp = claims.get("exp")
    now = time.time()
    if not isinstance(exp, int) or exp <= now or exp > now + JWT_MAX_LIFETIME:
        raise ValueError("exp %r is not within 24 h from now" % exp)
    return k


def decrypt(sub, body):
    """RFC 8291 as a user agent does it: the plaintext of one aes128gcm record."""
    salt, rs, idlen = body[:16], int.from_bytes(body[16:20], "big"), body[20]
    if idlen != 65 or rs < 18:
        raise ValueError("bad aes128gcm header (idlen %d, rs %d)" % (idlen, rs))
    as_pub, ct = body[21:86], body[86:]
    if len(ct) > rs:
        raise ValueError("more than one record")
    peer = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), as_pub)
    secret = sub["key"].exchange(ec.ECDH(), peer)
    ua_pub = point(sub["key"])
    ikm = hkdf(sub["auth"], secret, b"WebPush: info\x00" + ua_pub + as_pub, 32)
    cek = hkdf(salt, ikm, b"Content-Encoding: aes128gcm\x00", 16)
    nonce = hkdf(salt, ikm, b"Content-Encoding: nonce\x00", 12)
    try:
        plain = AESGCM(cek).decrypt(nonce, ct, None)
    except InvalidTag:
        raise ValueError("the message does not decrypt (bad tag)")
    plain = plain.rstrip(b"\x00")
    if not plain.endswith(b"\x02"):
        raise ValueError("no last-record delimiter")
    return json.loads(plain[:-1].decode("utf-8"))


class Handler(fakehttp.Handler):
    def origin(self):
        return "http://%s" % self.headers.get("Host", "")

    def reply(self, status, obj):
        self.send(status, "application/json", json.dumps(obj).encode())

    def do_GET(self):
        if self.path.startswith("/new/"):
            name = self.path[5:]
            key = ec.generate_private_key(ec.SECP256R1())
            auth = os.urandom(16)
            with LOCK:
                SUBS[name] = {"key": key, "auth": auth, "status": 201}
            self.reply(200, {"endpoint": "%s/push/%s" % (self.origin(), name),
                             "expirationTime": None,
                             "keys": {"p256dh": b64e(point(key)), "auth": b64e(auth)}})
        elif self.path == "/log":
            with LOCK:
                self.reply(200, LOG)
        else:
            self.reply(404, {"error": "no such path"})

    def do_POST(self):
        body = self.read_raw_body(BODY_MAX) or b""
        parts = self.path.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "answer":
            with LOCK:
                if parts[1] in SUBS:
                    SUBS[parts[1]]["status"] = int(parts[2])
            self.reply(200, {})
            return
        if len(parts) != 2 or parts[0] != "push":
            self.reply(404, {"error": "no such path"})
            return
        with LOCK:
            sub = SUBS.get(parts[1])
        rec = {"name": parts[1], "ok": False, "error": None, "message": None,
               "ttl": self.headers.get("TTL"), "urgency": self.headers.get("Urgency"),
               "topic": self.headers.get("Topic"), "vapidKey": None,
               "status": sub["status"] if sub else 404}
        try:
            if sub is None:
                raise ValueError("unknown subscription")
            rec["vapidKey"] = check_vapid(self.headers.get("Authorization"), self.origin())
            if self.headers.get("Content-Encoding") != "aes128gcm":
                raise ValueError("Content-Encoding is not aes128gcm")
            if rec["ttl"] is None or not rec["ttl"].isdigit():
                raise ValueError("no TTL")
            rec["message"] = decrypt(sub, body)
            rec["ok"] = True
        except (ValueError, KeyError, IndexError) as e:
            rec["error"] = str(e)
            if sub is not None and rec["status"] < 400:
                rec["status"] = 400
        with LOCK:
            LOG.append(rec)
        self.reply(rec["status"], {} if rec["ok"] else {"error": rec["error"]})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    fakehttp.add_listen_args(ap)
    args = ap.parse_args()
    return fakehttp.serve(fakehttp.server(Handler, args.port), args.port_file)


if __name__ == "__main__":
    sys.exit(main())
