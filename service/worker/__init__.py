"""The trial worker: allocate, with torch, what SGLang 0.5.23 allocates for a plan's stages
and measure it (`trial.py`), one trial per device at a time (`runner.py`), standalone as a
small HTTP app (`app.py`, `mambasizer worker`) or embedded in the API (`client.py`).

Nothing here imports torch at module import time: the solver and the API stay torch-free.
"""
