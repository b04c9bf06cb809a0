"""Imported once by the heavy-work pool's fork server (service.api.workpool): the job code
and the solver's preset layouts, so every worker process it forks starts warm."""

from service.api import jobs

jobs.warm()
