"""uvicorn's h11 protocol with header and body read deadlines (see mambasizer.service.api.read_timeouts).

A connection whose request headers are not complete `header_timeout` seconds after it
opened (or after the first byte of its next request), or whose body is not complete
`body_timeout` seconds after its headers, gets `408 Request Timeout` (problem+json, saying
which deadline) and is closed; the app, waiting on the body, sees a disconnect. Only a
response the app has already begun is not interrupted by a 408 (the connection is just
closed). Trickled bytes never extend either deadline; the app's own time to answer is not
counted.
"""

from __future__ import annotations

import asyncio
import json
import logging

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from mambasizer.service.api.read_timeouts import DEFAULT_BODY_TIMEOUT_S, DEFAULT_HEADER_TIMEOUT_S

log = logging.getLogger("mambasizer.api")


_HEADERS, _BODY = "headers", "body"


def _408(phase: str, timeout_s: float) -> bytes:
    """The 408 written by hand: h11 cannot answer a request it has not parsed (headers), and
    the app is still waiting on the body it would answer from."""
    what = "request headers" if phase == _HEADERS else "request body"
    body = json.dumps({
        "type": "urn:mambasizer:problem:request-timeout", "title": "Request Timeout", "status": 408,
        "detail": f"the {what} did not arrive within {timeout_s:g} s; send the whole request at once and retry",
        "field": "request",
    }).encode()
    head = (f"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/problem+json\r\n"
            f"x-content-type-options: nosniff\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n")
    return head.encode() + body


class TimedH11Protocol(H11Protocol):
    header_timeout: float = DEFAULT_HEADER_TIMEOUT_S
    body_timeout: float = DEFAULT_BODY_TIMEOUT_S

    _phase: str | None = None
    _read_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._arm(_HEADERS)  # a connection that never sends a byte is a slow client too

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._track()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # Keep-alive: the next request's header deadline starts with its first byte (the
        # idle wait before it is uvicorn's keep-alive timeout).
        self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    # ------------------------------------------------------------------ deadlines

    def _track(self) -> None:
        state = self.conn.their_state
        if state is h11.IDLE:
            if self._phase != _HEADERS and self.conn.trailing_data[0]:
                self._arm(_HEADERS)  # the first bytes of a (next) request
        elif state is h11.SEND_BODY:
            if self._phase != _BODY:
                self._arm(_BODY)
        else:  # DONE, MUST_CLOSE, CLOSED, ERROR: nothing more to read for this request
            self._disarm()

    def _arm(self, phase: str) -> None:
        self._disarm()
        self._phase = phase
        delay = self.header_timeout if phase == _HEADERS else self.body_timeout
        self._read_timer = self.loop.call_later(delay, self._timed_out, phase)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None
        self._phase = None

    def _timed_out(self, phase: str) -> None:
        self._read_timer = None
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if (phase == _HEADERS and state is not h11.IDLE) or (phase == _BODY and state is not h11.SEND_BODY):
            return  # the phase ended as the timer fired
        client = self.client[0] if self.client else None
        log.warning(
            "slow client: 408, connection closed",
            extra={"fields": {"event": "read_timeout", "phase": phase, "client": client,
                              "timeout_s": self.header_timeout if phase == _HEADERS else self.body_timeout}},
        )
        timeout_s = self.header_timeout if phase == _HEADERS else self.body_timeout
        # IDLE: no request parsed yet; SEND_RESPONSE: the app has not begun its answer.
        if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            self.transport.write(_408(phase, timeout_s))
        self.transport.close()


def timed_h11(header_timeout: float = DEFAULT_HEADER_TIMEOUT_S, body_timeout: float = DEFAULT_BODY_TIMEOUT_S) -> type:
    """The protocol class to pass as uvicorn's `http=`, with these deadlines."""
    return type("TimedH11Protocol", (TimedH11Protocol,), {"header_timeout": float(header_timeout), "body_timeout": float(body_timeout)})


__all__ = ["TimedH11Protocol", "timed_h11"]
