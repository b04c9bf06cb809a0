"""Import shim for an older SGLang release, in a subprocess of its own: the release's
`sglang/` tree (`release_wheels.release_source(v)`) first on PYTHONPATH, the repository
after it. Nothing of SGLang is copied; only imports that its argument and resolution code
never exercise are stood in for:

* the third-party packages of `sglang_ref.FAKED_MODULES`, plus `openai`, `openai_harmony`,
  `xgrammar`, `partial_json_parser` and `uvloop` (not installed in the venv: older
  releases import them at module level from `server_args`' import chain). Fake classes
  validate as `Any` in pydantic models and iterate as empty;
* whole SGLang subpackages that need a GPU or the OpenAI protocol at import time and hold no
  argument or resolution code: the function-call parsers (so `--tool-call-parser` lists
  no choices here: the flag table records no choices for it), the OpenAI entrypoint
  protocol, the FLA Triton kernels (`chunk_delta_h` keeps its CHUNK_SIZE, read off the
  release's own file);
* transformers' `Auto*.register` accepts a name that is already registered (the venv's
  transformers is newer than some releases and registers `qwen3_asr` itself).

    PYTHONPATH=<release tree>:<repo> python -m tests.conformance.release_shim flags
prints that release's launch parser as the flag table (JSON) the project ships.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import sys
import warnings

from tests.conformance import sglang_ref as _ref

_EXTRA_FAKES = ("openai", "openai_harmony", "xgrammar", "partial_json_parser", "uvloop")
_FAKED_SGLANG = (
    "sglang.srt.function_call",
    "sglang.srt.entrypoints.openai",
    "sglang.srt.layers.attention.fla",
    "sglang.kernels.ops.attention.fla",
)
# Flags whose choices come from a faked subpackage: recorded without choices.
FAKED_CHOICES = frozenset({"tool_call_parser"})
_INSTALLED = False


class _SGLangSubpackageFinder(_ref._FakeFinder):
    def find_spec(self, name, path, target=None):
        if any(name == p or name.startswith(p + ".") for p in _FAKED_SGLANG):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def exec_module(self, module):
        # FLA's chunk_delta_h is imported for its CHUNK_SIZE constant (the mamba chunk size
        # resolution reads it): the stand-in holds the value read off the release's file.
        if module.__name__.endswith(".fla.chunk_delta_h"):
            module.CHUNK_SIZE = _chunk_size(module.__name__)


def _chunk_size(name: str) -> int:
    import ast
    import os

    for root in sys.path:
        path = os.path.join(root, *name.split(".")) + ".py"
        if os.path.exists(path):
            for node in ast.parse(open(path).read()).body:
                if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "CHUNK_SIZE" for t in node.targets):
                    return int(ast.literal_eval(node.value))
    raise RuntimeError(f"CHUNK_SIZE not found for {name}")


def install() -> None:
    """Set up the stand-ins (once per process; this process imports only this release)."""
    global _INSTALLED
    if _INSTALLED:
        return
    from pydantic_core import core_schema

    _ref.FAKED_MODULES = _ref.FAKED_MODULES + _EXTRA_FAKES  # type: ignore[assignment]
    meta = _ref._FakeClassMeta
    meta.__get_pydantic_core_schema__ = lambda cls, source, handler: core_schema.any_schema()  # type: ignore[attr-defined]
    _ref._FakeModule.__index__ = lambda self: 0  # type: ignore[attr-defined]
    plain_getattr = meta.__getattr__

    def getattr_iterable(cls, name):
        value = plain_getattr(cls, name)
        if isinstance(value, meta) and "__iter__" not in value.__dict__:
            value.__iter__ = lambda self: iter(())
        return value

    meta.__getattr__ = getattr_iterable  # type: ignore[method-assign]
    _ref._prime_library_caches()
    import transformers

    for name in ("AutoConfig", "AutoProcessor", "AutoTokenizer", "AutoImageProcessor"):
        cls = getattr(transformers, name)
        original = cls.register

        def register(*args, _original=original, **kwargs):
            try:
                return _original(*args, **{**kwargs, "exist_ok": True})
            except (TypeError, ValueError):
                return None

        cls.register = staticmethod(register)
    sys.meta_path.insert(0, _SGLangSubpackageFinder())
    _INSTALLED = True


def fakes():
    install()
    return _ref._fakes_active()


def parser() -> argparse.ArgumentParser:
    """This release's own launch parser (`ServerArgs.add_cli_args`, as `prepare_server_args`)."""
    with warnings.catch_warnings(), fakes():
        warnings.simplefilter("ignore")
        from sglang.srt.server_args import ServerArgs

        out = argparse.ArgumentParser(prog="sglang serve")
        ServerArgs.add_cli_args(out)
    return out


def _jsonable(value):
    try:
        json.dumps(value)
        return value
    except TypeError:
        return repr(value)


_NO_VALUE = (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._StoreConstAction, argparse.BooleanOptionalAction)


def flag_entry(action: argparse.Action) -> dict:
    """One flag as the shipped table holds it (the keys of sglang_flags_0_5_23.json, plus
    choices: None when any choice is given or the choices are not plain values)."""
    if isinstance(action, argparse._StoreFalseAction):
        raise ValueError(f"{action.dest}: a store_false flag, which the shipped table cannot express")
    nargs = 0 if isinstance(action, _NO_VALUE) else action.nargs
    choices = None
    if action.choices is not None and action.dest not in FAKED_CHOICES:
        listed = [_jsonable(c) for c in action.choices]
        if isinstance(action.choices, (set, frozenset, dict)):
            listed = sorted(listed, key=str)  # unordered in the release: a stable order here
        if all(isinstance(c, (str, int, float)) for c in listed):
            choices = listed
    return {
        "dest": action.dest,
        "options": list(action.option_strings),
        "nargs": nargs,
        "default": _jsonable(action.default),
        "negatable": isinstance(action, argparse.BooleanOptionalAction),
        "choices": choices,
    }


def flag_table(p: argparse.ArgumentParser) -> list[dict]:
    return [flag_entry(a) for a in p._actions if a.option_strings and a.dest != "help"]


def main(argv: list[str]) -> int:
    if argv[:1] == ["flags"]:
        table = flag_table(parser())
        with fakes():
            import sglang
        json.dump({"sglang": getattr(sglang, "__version__", None), "flags": table}, sys.stdout)
        return 0
    print("usage: python -m tests.conformance.release_shim flags", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
