"""Imported once by the heavy-work pool's fork server (mambasizer.service.api.workpool): the job code
and the solver's preset layouts, so every worker process it forks starts warm."""

import gc

from mambasizer.service.api import jobs
from mambasizer.service.api.parent_watch import die_with_parent

# The fork server exits when the server does, even SIGKILLed (its workers follow it by
# PDEATHSIG): a parent-pid watch only, since the API thread that started it may end first.
die_with_parent(pdeathsig=False)

jobs.warm()
# The forked workers share these pages: a collection never walks frozen objects, so it
# neither pauses on them nor writes their GC headers (which would copy each page per worker).
gc.collect()
gc.freeze()
