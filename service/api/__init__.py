"""mambasizer's HTTP service (FastAPI), built by `service.api.app.create_app`.

This package's `__init__` imports nothing heavy: `service.api.wire` (request decoding
shared with `mambasizer plan`) must stay importable without FastAPI.
"""
