"""A checkpoint's quantization ignore list, validated and compiled once, matched in linear time.

The entries come from a client's config.json, so they are untrusted input. Each entry keeps the
meaning SGLang 0.5.23 gives it (conformance: tests/conformance/test_ignore_list_conformance.py
runs SGLang's own functions on a table of names and patterns):

* `re:<regex>`: compressed-tensors' `_is_equal_or_regex_match`, `re.match(regex, name)` (anchored
  at the start only);
* an entry with `*`: ModelOptQuantConfig.is_layer_excluded's glob, `re.compile(entry with "." ->
  "\\." and "*" -> ".*")` full-matched against the whole name or any one of its dotted parts (only
  `.` is escaped, as SGLang does: `[`, `(`, `?` keep their regex meaning);
* any other entry: `quantization.utils._module_path_match`, a match on dotted module-path
  boundaries (`mlp.gate` is not `mlp.gate_up_proj`).

Python's `re` backtracks (a crafted `re:(.*)(.*)...Z$` runs for minutes), so the regexes are
parsed with Python's own parser (an entry SGLang's `re.compile` refuses is refused here, naming it)
and re-emitted, construct by construct, as RE2 syntax; RE2 matches in time linear in the name.
What RE2 cannot express (backreferences, lookaround, atomic groups, possessive repeats,
conditionals, repeats over 1000) is refused with the reason. The module names matched are ASCII
identifiers joined by dots, on which Python's Unicode `\\d \\w \\s \\b` and RE2's agree.

All regex entries of one list are compiled into one alternation (one pass per name, whatever
the list's length); plain entries become a set of dotted runs. A small cache keeps the compiled
lists of the last few checkpoints (a recommend prices the same list for every layout it tries);
a list over CACHE_MAX_CHARS is never cached, so no request's data outlives it beyond that bound.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from re import _constants as C  # type: ignore[attr-defined,unused-ignore]  # the opcodes of Python's own parser
from re import _parser  # type: ignore[attr-defined,unused-ignore]

import re2

from mambasizer.schemas.request import MAX_IGNORE_ENTRIES, MAX_IGNORE_ENTRY_CHARS
from mambasizer.service.solver.errors import PlanInputError

# Per ignore list, per entry (real module paths are under 80 characters): the wire contract's
# bounds, stated in the OpenAPI under hf_config's x-ignore-lists.
MAX_ENTRIES = MAX_IGNORE_ENTRIES
MAX_ENTRY_CHARS = MAX_IGNORE_ENTRY_CHARS
RE2_MAX_MEM = 64 << 20  # one list's compiled alternation (RE2's default is 8 MiB)
RE2_MAX_REPEAT = 1000  # RE2 refuses a counted repeat above this
CACHE_LISTS = 8
CACHE_MAX_CHARS = 64 << 10  # a list with more characters than this is compiled per call, never kept

_OPTIONS = re2.Options()
_OPTIONS.max_mem = RE2_MAX_MEM
_OPTIONS.log_errors = False
_OPTIONS.never_capture = True


class PatternRefused(ValueError):
    """An entry that SGLang's `re` refuses, or that RE2 cannot match; `reason` says which."""


def _hex(c: int) -> str:
    return f"\\x{{{c:x}}}"


_CATEGORY = {
    C.CATEGORY_DIGIT: r"\d", C.CATEGORY_NOT_DIGIT: r"\D",
    C.CATEGORY_SPACE: r"\s", C.CATEGORY_NOT_SPACE: r"\S",
    C.CATEGORY_WORD: r"\w", C.CATEGORY_NOT_WORD: r"\W",
}
_FLAGS = ((C.SRE_FLAG_IGNORECASE, "i"),)
_REFUSED = {
    C.GROUPREF: "a backreference", C.GROUPREF_EXISTS: "a conditional group (?(...))",
    C.ASSERT: "a lookahead or lookbehind", C.ASSERT_NOT: "a negative lookahead or lookbehind",
    C.ATOMIC_GROUP: "an atomic group (?>...)", C.POSSESSIVE_REPEAT: "a possessive repeat",
}


def _emit_class(items, flags: int) -> str:
    out, negate = [], False
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            out.append(_hex(av))
        elif op is C.RANGE:
            out.append(_hex(av[0]) + "-" + _hex(av[1]))
        elif op is C.CATEGORY:
            out.append(_CATEGORY[av])
        else:  # pragma: no cover - every class item Python's parser makes is above
            raise PatternRefused(f"a character-class item {op} that linear-time matching does not model")
    return "[" + ("^" if negate else "") + "".join(out) + "]"


def _emit(sub, flags: int) -> str:
    """RE2 syntax with the same language as the parsed Python pattern `sub` under `flags`."""
    out = []
    for op, av in sub:
        if op in _REFUSED:
            raise PatternRefused(f"uses {_REFUSED[op]}, which linear-time (RE2) matching cannot express")
        if op is C.LITERAL:
            out.append(_hex(av))
        elif op is C.NOT_LITERAL:
            out.append("[^" + _hex(av) + "]")
        elif op is C.ANY:
            out.append("(?s:.)" if flags & C.SRE_FLAG_DOTALL else "[^\\n]")
        elif op is C.IN:
            out.append(_emit_class(av, flags))
        elif op is C.BRANCH:
            out.append("(?:" + "|".join(_emit(b, flags) for b in av[1]) + ")")
        elif op is C.SUBPATTERN:
            _group, add, delete, p = av
            inner = (flags | add) & ~delete
            body = _emit(p, inner)
            if (inner ^ flags) & C.SRE_FLAG_IGNORECASE:
                body = ("(?i:" if inner & C.SRE_FLAG_IGNORECASE else "(?-i:") + body + ")"
            out.append("(?:" + body + ")")
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
            lo, hi, p = av
            unbounded = hi is C.MAXREPEAT or hi == C.MAXREPEAT
            if lo > RE2_MAX_REPEAT or (not unbounded and hi > RE2_MAX_REPEAT):
                raise PatternRefused(f"repeats {hi if not unbounded and hi > RE2_MAX_REPEAT else lo} times; "
                                     f"linear-time (RE2) matching allows at most {RE2_MAX_REPEAT}")
            count = f"{{{lo},}}" if unbounded else f"{{{lo},{hi}}}"
            out.append("(?:" + _emit(p, flags) + ")" + count + ("?" if op is C.MIN_REPEAT else ""))
        elif op is C.AT:
            multiline = flags & C.SRE_FLAG_MULTILINE
            out.append({
                C.AT_BEGINNING: "(?m:^)" if multiline else r"\A",
                C.AT_BEGINNING_STRING: r"\A",
                # Python's `$` also matches before a final newline; module names have none.
                C.AT_END: "(?m:$)" if multiline else r"\z",
                C.AT_END_STRING: r"\z",
                C.AT_BOUNDARY: r"\b",
                C.AT_NON_BOUNDARY: r"\B",
            }[av])
        else:  # pragma: no cover - Python's parser makes no other node in a str pattern
            raise PatternRefused(f"uses {op}, which linear-time (RE2) matching does not model")
    return "".join(out)


def to_re2(pattern: str, glob: bool = False) -> str:
    """`pattern` (Python `re` syntax, as SGLang compiles it) as an RE2 pattern with the same
    matches; PatternRefused when Python's `re` refuses it or RE2 cannot express it.

    `glob`: the pattern is a translated ModelOpt glob, which SGLang compiles with the `regex`
    module rather than `re`. The two read a pattern alike except where `re` warns ("possible
    nested set": `regex` reads `[[:alpha:]]` as a POSIX class) or keeps a brace literal
    (`regex` reads `a{e<=1}` as a fuzzy match): such a glob is refused rather than guessed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            parsed = _parser.parse(pattern, 0)
    except FutureWarning as w:
        if glob:
            raise PatternRefused(f"is read differently by SGLang's glob matcher (the regex module) and Python's re ({w})") from None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # re parses it its own way, as SGLang's re does
            parsed = _parser.parse(pattern, 0)
    except re.error as e:
        raise PatternRefused(f"is not a valid regular expression ({e}); SGLang's {'glob translation' if glob else 're.compile'} refuses it") from None
    except RecursionError:
        raise PatternRefused("nests too deeply to parse") from None
    if glob and "{" in pattern and _has_literal(parsed, 0x7B):
        raise PatternRefused("holds a literal '{', which SGLang's glob matcher (the regex module) may read as a fuzzy-match constraint")
    flags = parsed.state.flags
    body = _emit(parsed, flags)
    if flags & C.SRE_FLAG_IGNORECASE:
        body = "(?i:" + body + ")"
    return body


def _has_literal(sub, code: int) -> bool:
    for op, av in sub:
        if op is C.LITERAL and av == code:
            return True
        nested = av[-1] if op in (C.SUBPATTERN, C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT, C.ATOMIC_GROUP) else None
        if op is C.BRANCH:
            if any(_has_literal(b, code) for b in av[1]):
                return True
        elif nested is not None and _has_literal(nested, code):
            return True
    return False


def glob_regex(entry: str) -> str:
    """ModelOptQuantConfig's translation of an exclude entry (`_compile_exclusion_pattern`)."""
    return entry.replace(".", r"\.").replace("*", r".*")


def _compile(alternatives: list[str], whole: bool) -> re2._Regexp | None:
    """One regex: any alternative at the start of the name (`re.match`), or the whole of it."""
    if not alternatives:
        return None
    pattern = r"\A(?:" + "|".join(alternatives) + (r")\z" if whole else ")")
    # re2._Regexp directly: re2.compile keeps every pattern it compiled in an unbounded-size
    # lru_cache (128 patterns of any length), which would keep a request's list alive.
    try:
        return re2._Regexp(pattern, _OPTIONS)
    except re2.error as e:
        raise PatternRefused(f"cannot be compiled for linear-time matching together ({e})") from None


def _dotted_runs(name: str) -> list[str]:
    """Every run of whole dotted parts of `name`: `_module_path_match(ignored, name)` holds
    exactly when `ignored.rstrip(".")` is one of them."""
    parts = name.rstrip(".").split(".")
    return [".".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)]


class IgnoreList:
    """One checkpoint's ignore entries, compiled. `entries` keeps the list as given (callers
    read it for family rules such as Qwen's shared-expert fusion)."""

    __slots__ = ("_glob", "_joined", "_plain", "_re", "entries")

    def __init__(self, entries: Sequence[str], fields: Sequence[str] | None = None):
        self.entries = tuple(entries)
        plain, regexes, globs = set(), [], []
        for i, entry in enumerate(self.entries):
            field = fields[i] if fields else f"[{i}]"
            try:
                if entry.startswith("re:"):
                    regexes.append("(?:" + to_re2(entry[3:]) + ")")
                elif "*" in entry:
                    globs.append("(?:" + to_re2(glob_regex(entry), glob=True) + ")")
                else:
                    plain.add(entry.rstrip("."))
            except PatternRefused as e:
                raise PlanInputError(field, f"{_show(entry)} {e}; fix or remove the entry") from None
        where = fields[0].rsplit("[", 1)[0] if fields else "the ignore list"
        try:
            self._re = _compile(regexes, whole=False)
            self._glob = _compile(globs, whole=True)
        except PatternRefused as e:
            raise PlanInputError(where, f"its regular expressions {e}; shorten the list") from None
        self._plain = frozenset(plain)
        # is_layer_skipped's expert rule: a FusedMoE prefix (`...mlp.experts`) contained in an entry.
        self._joined = "\n".join(self.entries)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def matches(self, name: str) -> bool:
        if self._plain and any(run in self._plain for run in _dotted_runs(name)):
            return True
        if self._re is not None and self._re.search(name) is not None:
            return True
        if self._glob is not None:
            return any(self._glob.search(n) is not None or any(self._glob.search(p) is not None for p in n.split("."))
                       for n in _lm_variants(name))
        return False

    def names_inside(self, prefix: str) -> bool:
        """An entry that contains `prefix` (SGLang's is_layer_skipped keeps such entries, which
        name paths inside a FusedMoE's experts): one substring search over the entries joined
        by a newline, which no module name holds."""
        return bool(self._joined) and "\n" not in prefix and prefix in self._joined


def _lm_variants(name: str) -> list[str]:
    # The checkpoint's names and SGLang's module paths differ in the language-model wrapper's
    # prefix: the glob is tried both ways.
    if name.startswith("model.language_model."):
        return [name, "model." + name[len("model.language_model."):]]
    if name.startswith("model."):
        return [name, "model.language_model." + name[len("model."):]]
    return [name]


def _show(entry: str) -> str:
    return repr(entry if len(entry) <= 80 else entry[:77] + "...")


_CACHE: OrderedDict[tuple[str, ...], IgnoreList] = OrderedDict()
_LOCK = threading.Lock()


def compiled(entries: Sequence[str], fields: Sequence[str] | None = None) -> IgnoreList:
    """The compiled list, from the small cache when the same list was compiled lately."""
    key = tuple(entries)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    built = IgnoreList(key, fields)
    if sum(map(len, key)) <= CACHE_MAX_CHARS:
        with _LOCK:
            _CACHE[key] = built
            while len(_CACHE) > CACHE_LISTS:
                _CACHE.popitem(last=False)
    return built
