"""auth.py: the Modal double's credentials: the token pair and its JWTs.

Modal's clients first trade the token pair (x-modal-token-id/-secret) for a
short-lived token (AuthTokenGet) and send it as x-modal-auth-token with every
later call; the Task Command Router takes its own JWT as `authorization:
Bearer`. Both are HS256 JWTs signed with a key drawn at startup, told apart
by their "aud" claim, so neither can stand in for the other. The JWT code is
written out here (a dozen lines of HMAC) because Debian's python3 has no JWT
package installed and the double needs no other feature of one.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time

AUD_CLIENT = "modal-client"
AUD_ROUTER = "task-command-router"
MAX_TOKEN_LEN = 4096


class AuthError(Exception):
    """A credential was missing, wrong or expired; the message names which."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Credentials:
    def __init__(self, token_id: str, token_secret: str, ttl: int) -> None:
        self._id = token_id.encode()
        self._secret = token_secret.encode()
        self._key = secrets.token_bytes(32)
        self.ttl = ttl

    def check_pair(self, md: dict[str, str]) -> None:
        tid, tsec = md.get("x-modal-token-id"), md.get("x-modal-token-secret")
        if tid is None or tsec is None:
            raise AuthError("missing x-modal-token-id or x-modal-token-secret")
        # Both compared in full, so that timing does not tell which one differs.
        ok_id = hmac.compare_digest(tid.encode(), self._id)
        ok_secret = hmac.compare_digest(tsec.encode(), self._secret)
        if not (ok_id and ok_secret):
            raise AuthError("invalid token id or secret")

    def issue(self, aud: str, **claims: str) -> str:
        """A JWT with exp. The JS SDK decodes the payload with atob(), which
        rejects base64url's '-' and '_', so a nonce is redrawn until the
        payload's encoding has neither (about 25 draws on average)."""
        now = int(time.time())
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
        while True:
            body = {"aud": aud, "iat": now, "exp": now + self.ttl, "jti": secrets.token_hex(8), **claims}
            payload = _b64(json.dumps(body, separators=(",", ":")).encode())
            if "-" not in payload and "_" not in payload:
                break
        signing = header + "." + payload
        sig = hmac.new(self._key, signing.encode(), hashlib.sha256).digest()
        return signing + "." + _b64(sig)

    def verify(self, token: str, aud: str) -> dict:
        if len(token) > MAX_TOKEN_LEN:
            raise AuthError("token longer than %d bytes" % MAX_TOKEN_LEN)
        parts = token.split(".")
        if len(parts) != 3:
            raise AuthError("malformed token: not header.payload.signature")
        signing = parts[0] + "." + parts[1]
        want = hmac.new(self._key, signing.encode(), hashlib.sha256).digest()
        try:
            got = _unb64(parts[2])
            claims = json.loads(_unb64(parts[1]))
        except (ValueError, UnicodeDecodeError):
            raise AuthError("malformed token: bad base64url or JSON") from None
        if not hmac.compare_digest(got, want):
            raise AuthError("invalid token signature")
        if not isinstance(claims, dict) or claims.get("aud") != aud:
            raise AuthError("token is not meant for this service")
        exp = claims.get("exp")
        if not isinstance(exp, int) or time.time() >= exp:
            raise AuthError("token expired")
        return claims
