"""The pydantic v2 wire contract shared by the API, the CLI, the Helm hook and the worker."""

from mambasizer.schemas.plan import REFERENCE, Plan, PlanError, ResolvedArgs, Stage
from mambasizer.schemas.request import (
    Budget,
    DraftModel,
    Env,
    HFConfigModel,
    Layout,
    LayoutModel,
    PlanRequest,
    PresetModel,
    ServerArgs,
)

__all__ = [
    "REFERENCE",
    "Budget",
    "DraftModel",
    "Env",
    "HFConfigModel",
    "Layout",
    "LayoutModel",
    "Plan",
    "PlanError",
    "PlanRequest",
    "PresetModel",
    "ResolvedArgs",
    "ServerArgs",
    "Stage",
]
