"""Import SGLang 0.5.23's `mem_cache.memory_pool` on a CPU-only machine.

The wheel imports GPU / IPC packages at module level (triton, zmq, ...) that pool
construction never uses. While `stubs()` is active those imports get inert stand-ins;
afterwards they are removed again, so the rest of the test session never sees them.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
import types

STUBBED = ("triton", "zmq", "IPython", "aiohttp", "torchvision", "sentencepiece", "tvm_ffi")


class _StubClass(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _StubClass(name, (), {"__init__": lambda self, *a, **k: None, "__module__": cls.__module__})
        setattr(cls, name, value)
        return value

    def __iter__(cls):
        return iter(())


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name[:1].isupper():
            value = _StubClass(name, (), {"__init__": lambda self, *a, **k: None, "__module__": self.__name__})
        else:
            value = _StubModule(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # used as a decorator
        return _StubModule(f"{self.__name__}()")

    def __mro_entries__(self, bases):
        return (object,)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in STUBBED:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        module.__version__ = "0.0.0"
        return module

    def exec_module(self, module):
        pass


_FINDER = _Finder()
_STASH: dict = {}


def _prime() -> None:
    # torch and transformers cache "is package X installed": answer before any stub exists.
    import torch  # noqa: F401
    from torch.utils._triton import has_triton_package

    has_triton_package()
    import transformers.utils.import_utils as iu

    for name in dir(iu):
        if name.startswith("is_") and name.endswith("_available"):
            try:
                getattr(iu, name)()
            except Exception:  # noqa: BLE001
                pass


@contextlib.contextmanager
def stubs():
    _prime()
    import transformers.utils.import_utils as iu

    original = iu._is_package_available

    def _is_package_available(pkg_name, return_version=False):
        if pkg_name.split(".")[0] in STUBBED:
            return (False, "N/A") if return_version else (False, None)
        return original(pkg_name, return_version)

    iu._is_package_available = _is_package_available
    sys.meta_path.insert(0, _FINDER)
    sys.modules.update(_STASH)
    try:
        yield
    finally:
        iu._is_package_available = original
        sys.meta_path.remove(_FINDER)
        for name in list(sys.modules):
            if name.split(".")[0] in STUBBED and isinstance(sys.modules[name], _StubModule):
                _STASH[name] = sys.modules.pop(name)
