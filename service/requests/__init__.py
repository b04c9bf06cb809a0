"""The request front door: every way a launch arrives becomes one PlanRequest plus its notes.

* a JSON body (the API, `mambasizer plan FILE`, `check FILE`, sweep bases, recommend's
  re-plans, each side of a pair): `decode_json` then `prepare`;
* a launch line (`sglang_args`, with `--model-path` naming the model): read inside
  `prepare` by the release's own parser (launch_line.py, model_path.py);
* the CLI's `--preset/--gpu/--gpu-memory-mib/--budget-gib/--sglang-version -- ARGS`, which
  the Helm preflight hook renders: `command_line.launch_body` makes it the same JSON body;
* a start-up log (check-log): its `server_args` record becomes the launch line that sets it
  (server_args_record.py), its `model_path` resolves by `resolve_logged_model_path`, and the
  body goes through `prepare` with the free memory the log measured as the budget.

Outside the web layer on purpose: the solver's clients (sweep, the pair view, recommend, the
CLI) reach request handling here, never through `service/api/`, and the API is one more
client. `prepare` raises PlanInputError (InvalidRequest for schema errors) naming the field.
"""

from mambasizer.service.requests.encoding import plan_json, with_fields
from mambasizer.service.requests.errors import (
    MAX_LISTED_ERRORS,
    MAX_MESSAGE_CHARS,
    InvalidRequest,
    MalformedRequest,
    bounded,
    input_error_line,
    validation_error,
)
from mambasizer.service.requests.json_body import NONFINITE_ALLOWED_UNDER, decode_json
from mambasizer.service.requests.launch_line import MAX_SGLANG_ARG_CHARS, MAX_SGLANG_ARGS
from mambasizer.service.requests.model_path import ResolvedModel, resolve_model_path
from mambasizer.service.requests.prepare import Prepared, prepare

__all__ = [
    "MAX_LISTED_ERRORS",
    "MAX_MESSAGE_CHARS",
    "MAX_SGLANG_ARGS",
    "MAX_SGLANG_ARG_CHARS",
    "NONFINITE_ALLOWED_UNDER",
    "InvalidRequest",
    "MalformedRequest",
    "Prepared",
    "ResolvedModel",
    "bounded",
    "decode_json",
    "input_error_line",
    "plan_json",
    "prepare",
    "resolve_model_path",
    "validation_error",
    "with_fields",
]
