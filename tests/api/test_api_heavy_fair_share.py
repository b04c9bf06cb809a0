"""Each client gets a fair share of the heavy pool (issue 25 item 8): against a real
`mambasizer serve`, client A (127.0.0.1) floods it with heavy recommends that run to their
deadline; past its `--heavy-per-client` share A is answered 429 problem+json with Retry-After,
while client B (another peer address, 127.0.0.2) is still admitted and answered. Without the
per-client bound A's flood fills every place and B gets the 429."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx

from api_helpers import PROBLEM_JSON, preset_request
from serving import start_mambasizer

HEAVY = json.loads((Path(__file__).resolve().parents[2] / "bench" / "requests" / "recommend-heavy-kimi-k3.json").read_text())
WORKERS, QUEUE, PER_CLIENT = 3, 3, 2


def _from(address: str) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=60)


def test_one_clients_flood_does_not_starve_another(tmp_path):
    srv = start_mambasizer("serve", "--heavy-workers", str(WORKERS), "--heavy-queue", str(QUEUE), "--heavy-per-client",
                           str(PER_CLIENT), "--request-deadline", "15", cwd=tmp_path, log=tmp_path / "stderr.log", ready="/readyz")
    try:
        flood: list[httpx.Response] = []
        lock = threading.Lock()

        def a_request() -> None:
            with _from("127.0.0.1") as a:
                try:
                    r = a.post(f"{srv.base}/v1/recommend", json=HEAVY)
                except httpx.HTTPError:
                    return
            with lock:
                flood.append(r)

        threads = [threading.Thread(target=a_request, daemon=True) for _ in range(WORKERS + QUEUE)]
        for t in threads:
            t.start()
        # A's share is admitted at once; the rest of its flood is refused at once.
        deadline = threading.Event()
        for _ in range(100):
            with lock:
                if len(flood) >= WORKERS + QUEUE - PER_CLIENT:
                    break
            deadline.wait(0.1)
        with lock:
            refused = [r for r in flood if r.status_code == 429]
        assert len(refused) == WORKERS + QUEUE - PER_CLIENT, [(r.status_code, r.text[:200]) for r in flood]
        for r in refused:
            assert r.headers["content-type"].startswith(PROBLEM_JSON) and int(r.headers["retry-after"]) >= 1
            assert f"already has {PER_CLIENT} heavy requests" in r.json()["detail"]
        # B, meanwhile, is admitted and answered while A's share still runs.
        sweep = {"base": preset_request(tp_size=4), "axes": [{"field": "server_args.tp_size", "values": [1, 2, 4]}]}
        with _from("127.0.0.2") as b:
            answer = b.post(f"{srv.base}/v1/sweep", json=sweep)
        assert answer.status_code == 200, answer.text[:300]
        with lock:
            assert len(flood) == WORKERS + QUEUE - PER_CLIENT  # A's admitted share was still running
        metrics = httpx.get(f"{srv.base}/metrics", timeout=10).text
        assert 'reason="client_share"' in metrics
    finally:
        srv.stop()


def test_the_client_is_the_peer_unless_the_operator_trusts_a_header():
    from starlette.requests import Request

    from mambasizer.service.api.pool_settings import PoolSettingError, PoolSettings
    from mambasizer.service.api.workpool import client_of

    req = Request({"type": "http", "client": ("10.0.0.7", 5555), "headers": [(b"x-forwarded-for", b"1.2.3.4, 192.168.1.9")]})
    assert client_of(req, None) == "10.0.0.7"  # a client's own header claims nothing by default
    assert client_of(req, "x-forwarded-for") == "192.168.1.9"  # the address the trusted proxy appended
    assert client_of(req, "x-real-ip") == "10.0.0.7"  # the header missing: the peer
    s = PoolSettings.resolve(environ={"MAMBASIZER_HEAVY_PER_CLIENT": "3", "MAMBASIZER_HEAVY_CLIENT_HEADER": "X-Forwarded-For"})
    assert (s.per_client, s.client_header) == (3, "x-forwarded-for")
    assert PoolSettings.resolve(environ={}).per_client == 4 and PoolSettings.resolve(environ={}).client_header is None
    for env in ({"MAMBASIZER_HEAVY_PER_CLIENT": "0"}, {"MAMBASIZER_HEAVY_CLIENT_HEADER": "x y"}):
        try:
            PoolSettings.resolve(environ=env)
        except PoolSettingError as exc:
            assert next(iter(env)) in str(exc)
        else:
            raise AssertionError(env)
