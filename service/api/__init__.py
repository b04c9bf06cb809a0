"""mambasizer's HTTP service (FastAPI), built by `mambasizer.service.api.app.create_app`.

This package's `__init__` imports nothing heavy: `mambasizer.service.api.wire` (request decoding
shared with `mambasizer plan`) must stay importable without FastAPI.
"""
