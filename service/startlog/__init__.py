"""SGLang start-up logs: read (parse.py: text -> the figures each rank printed), checked
against the plan (compare.py: predicted vs logged, what `mambasizer check-log` and
POST /v1/check-log answer) and against the pre-boot estimate (estimate.py: free memory and
weights predicted from the GPU alone)."""
