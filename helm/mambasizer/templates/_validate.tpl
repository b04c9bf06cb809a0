{{- /*
Checks across values that values.schema.json cannot express (JSON schema does not compare
two numbers). Included by api-deployment.yaml, which every render produces; each failure
names the values and the fix.
*/ -}}
{{- define "mambasizer.validate" -}}
{{- $v := .Values }}

{{- with $v.autoscaling }}
{{- if and .enabled (gt (int64 .minReplicas) (int64 .maxReplicas)) }}
{{- fail (printf "autoscaling.minReplicas (%d) is above autoscaling.maxReplicas (%d): lower minReplicas or raise maxReplicas" (int64 .minReplicas) (int64 .maxReplicas)) }}
{{- end }}
{{- end }}

{{- with $v.serviceMonitor }}
{{- if .enabled }}
{{- $interval := include "mambasizer.durationMs" .interval | int64 }}
{{- $timeout := include "mambasizer.durationMs" .scrapeTimeout | int64 }}
{{- if gt $timeout $interval }}
{{- fail (printf "serviceMonitor.scrapeTimeout (%s) is longer than serviceMonitor.interval (%s): Prometheus rejects the scrape config; shorten scrapeTimeout or lengthen interval" .scrapeTimeout .interval) }}
{{- end }}
{{- end }}
{{- end }}

{{- with $v.api.podDisruptionBudget }}
{{- if .enabled }}
{{- $min := toString .minAvailable }}
{{- $max := toString .maxUnavailable }}
{{- if eq (empty $min) (empty $max) }}
{{- fail "api.podDisruptionBudget: set exactly one of minAvailable or maxUnavailable (the other to \"\")" }}
{{- end }}
{{- $floor := ternary (int64 $v.autoscaling.minReplicas) (int64 $v.api.replicas) $v.autoscaling.enabled }}
{{- $floorKey := ternary "autoscaling.minReplicas" "api.replicas" $v.autoscaling.enabled }}
{{- if or (eq $max "0") (eq $max "0%") (eq $min "100%") (and $min (not (hasSuffix "%" $min)) (ge (int64 $min) $floor)) }}
{{- fail (printf "api.podDisruptionBudget (minAvailable %q, maxUnavailable %q) allows no eviction with %s %d: node drains would hang; allow at least one pod to go" $min $max $floorKey $floor) }}
{{- end }}
{{- end }}
{{- end }}

{{- if $v.trials.enabled }}
{{- $memGiB := float64 $v.trials.memoryGiB }}
{{- if and (not $v.worker.enabled) (not $memGiB) }}
{{- fail "trials.enabled without worker.enabled runs trials inside the API pods: set trials.memoryGiB (the memory one trial may allocate, below api.resources.limits.memory), or enable the worker" }}
{{- end }}
{{- $limit := dig "limits" "memory" "" $v.api.resources }}
{{- $limitBytes := include "mambasizer.quantityBytes" $limit }}
{{- if and (not $v.worker.enabled) $limitBytes (ge (mulf $memGiB 1073741824.0) (float64 $limitBytes)) }}
{{- fail (printf "trials.memoryGiB (%v GiB) does not fit api.resources.limits.memory (%s) with the API itself: raise the limit or lower trials.memoryGiB" $v.trials.memoryGiB $limit) }}
{{- end }}
{{- end }}

{{- $reserved := dict "api" (list "deployments" "tmp" "trial-token" "worker-token") "worker" (list "tmp" "worker-token") }}
{{- range $component, $names := $reserved }}
{{- range (index $v $component).extraVolumes }}
{{- if has .name $names }}
{{- fail (printf "%s.extraVolumes: the volume name %q is the chart's own; pick another" $component .name) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
