"""Conformance suite: SGLang 0.5.23's own sizing functions, run on the CPU, are the oracle
(`sglang_ref.reference_plan`); `cases.generate_cases` makes the requests."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for p in (HERE, ROOT):
    if p not in sys.path:
        sys.path.insert(0, p)
