"""mambasizer: SGLang 0.5.23's mamba/KV start-up sizing, answered before deployment."""

__version__ = "0.1.0"
