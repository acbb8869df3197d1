"""The HTTP/1.1 protocol the API is served with (:mod:`remd.http.app`): uvicorn's, answering a
request it cannot parse in the API's error shape."""

from __future__ import annotations

import json

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from remd.http.models import error_body
from remd.http.requestlog import RequestLog


def http11(requests: RequestLog) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol (h11, whatever else is installed), with its answer to a
    request it cannot parse (a malformed ``Content-Length``, request line or header) in the
    API's error shape instead of plain text, and counted in ``requests``."""

    class Http11(H11Protocol):
        def send_400_response(self, msg: str) -> None:
            body = json.dumps(error_body(
                "InvalidHTTP", "request is not valid HTTP/1.1: its request line, a header or "
                "its Content-Length is malformed")).encode()
            headers = [(b"content-type", b"application/json"),
                       (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
            for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                          h11.Data(data=body), h11.EndOfMessage()):
                self.transport.write(self.conn.send(event))
            self.transport.close()
            requests.record("unparsable", 400, 0.0)

    return Http11
