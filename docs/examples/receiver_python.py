"""A receiver that verifies both signatures of a delivery with Python's standard library only.

PORT=8080 PUNCTUAL_SIGNING_SECRET=whsec_... python3 receiver_python.py
"""

import base64
import hashlib
import hmac
import json
import os
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ["PUNCTUAL_SIGNING_SECRET"]
TOLERANCE_SECONDS = 5 * 60
MAX_BODY_BYTES = 1024 * 1024

# The Standard Webhooks key: the bytes base64-encoded after `whsec_`, or a custom secret's UTF-8 bytes.
if SECRET.startswith("whsec_"):
    STANDARD_KEY = base64.b64decode(SECRET[len("whsec_"):], validate=True)
else:
    STANDARD_KEY = SECRET.encode("utf-8")

# Deliveries are at least once: a retry or a replay within the tolerance has the same webhook-id.
seen = set()


def within_tolerance(seconds):
    return abs(time.time() - seconds) <= TOLERANCE_SECONDS


def verify_standard_webhooks(headers, body):
    """webhook-signature: `v1,` + base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`."""
    msg_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not msg_id or not timestamp or not signatures:
        return "missing webhook-id, webhook-timestamp or webhook-signature"
    if not timestamp.isdigit() or not within_tolerance(int(timestamp)):
        return "webhook-timestamp is too old or too new"
    signed = f"{msg_id}.{timestamp}.".encode("utf-8") + body
    expected = base64.b64encode(hmac.new(STANDARD_KEY, signed, hashlib.sha256).digest()).decode("ascii")
    # The header may hold several space-separated signatures; one match is enough.
    for entry in signatures.split(" "):
        version, _, signature = entry.partition(",")
        if version == "v1" and hmac.compare_digest(signature.encode("utf-8"), expected.encode("ascii")):
            return None
    return "webhook-signature does not match"


def verify_jiter(headers, body):
    """X-Jiter-Signature: base64 HMAC-SHA256 of `<X-Jiter-Request-Timestamp>:<body>`, keyed with the
    whole secret string (`whsec_` included) as UTF-8."""
    timestamp = headers.get("X-Jiter-Request-Timestamp")
    signature = headers.get("X-Jiter-Signature")
    if not timestamp or not signature:
        return "missing X-Jiter-Request-Timestamp or X-Jiter-Signature"
    if not timestamp.isdigit() or not within_tolerance(int(timestamp) / 1000):
        return "X-Jiter-Request-Timestamp is too old or too new"
    signed = f"{timestamp}:".encode("utf-8") + body
    expected = base64.b64encode(hmac.new(SECRET.encode("utf-8"), signed, hashlib.sha256).digest()).decode("ascii")
    if hmac.compare_digest(signature.encode("utf-8"), expected.encode("ascii")):
        return None
    return "X-Jiter-Signature does not match"


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.answer(413, b'{"message":"Too large"}')
            return
        # Verify the raw bytes, never a re-serialized object.
        body = self.rfile.read(length)
        problem = verify_standard_webhooks(self.headers, body) or verify_jiter(self.headers, body)
        if problem:
            print(f"invalid: {problem}", flush=True)
            self.answer(401, b'{"message":"Invalid signature"}')
            return
        msg_id = self.headers["webhook-id"]
        if msg_id in seen:
            print(f"duplicate {msg_id}", flush=True)
        else:
            seen.add(msg_id)
            delivery = json.loads(body)
            print(f"valid {msg_id} scheduled for {delivery['scheduledTime']}: {delivery['payload']}", flush=True)
        self.answer(200, b"")

    def answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass  # one line per delivery is printed above


port = int(os.environ.get("PORT", "8080"))
server = ThreadingHTTPServer(("", port), Handler)
print(f"listening on {port}", flush=True)
server.serve_forever()
