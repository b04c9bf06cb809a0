{{- /*
mambasizer preflight hook: a pre-install/pre-upgrade Job that runs `mambasizer check`
and fails the release with one readable line when SGLang 0.5.23 would not start with the
release's model, launch arguments and memory, or when a stated requirement is missed.

This file is the source (helm/mambasizer-preflight/templates/_preflight.tpl, a library
chart). The mambasizer chart takes it as a chart dependency (vendored in
helm/mambasizer/charts/); helm/preflight-hook/mambasizer-preflight-job.yaml carries it
verbatim for charts that copy a template instead. tests/deploy/sync.py keeps both current.

Call it from any chart:

  {{- include "mambasizer-preflight.job" (dict "root" $ "values" .Values.mambasizerPreflight) }}

`values` keys (all optional except image.repository and one of request / preset):
  enabled                 bool    render nothing when false (default true)
  image.repository/tag/pullPolicy  an image with `mambasizer` on PATH (the api target)
  hookWeight              int     helm.sh/hook-weight (default -5)
  activeDeadlineSeconds   int     Job deadline (default 300)
  request                 object  a PlanRequest, or {"prefill": ..., "decode": ...} (form 1)
  prefill, decode                 form 3, a 1P1D pair checked as a whole: each side a PlanRequest
                                  or {preset, gpu | budgetGiB, sglangArgs}; the install fails when
                                  either side would not start (requirements are the decode side's)
  preset, gpu, sglangArgs         form 2: `check --preset P --gpu G -- ARGS` (planned from the
                                  GPU alone: `mambasizer check --help`, GET /v1/gpus)
  preset, budgetGiB, sglangArgs   form 2b: `check --preset P --budget-gib X -- ARGS`
  preset, gpuLabels, sglangArgs   form 2c: `check --preset P --gpu-labels K=V,... -- ARGS`: the GPU
                                  named by node labels (GPU Feature Discovery nvidia.com/gpu.*,
                                  AMD amd.com/gpu.product-name); GET /v1/gpus lists each part's
  preset, gpuLabelsFromNode, sglangArgs  form 2d: the same labels read from that node with Helm's
                                  `lookup` (a live install; `helm template` and --dry-run read none)
  require.maxRunningRequests / maxTotalTokens / contextLength   int, 0 = none
  sglangVersion           string  the release the deployment runs (`check --sglang-version`)
  upgradeTo               string  also plan it at this release (`check --upgrade-to`): fail when
                                  that release would not start it, or loses more than
                                  maxCapacityLoss (share, default 0.1) of its requests / tokens
                                  or maxSlackLoss (default 0.5) of the memory outside the pools
  url                     string  ask a running mambasizer service instead
  resources, nodeSelector, tolerations, podAnnotations, serviceAccountName
  nameSuffix              string  default "mambasizer-preflight" (Job = <release>-<suffix>)
*/ -}}

{{- /* The preset form's GPU labels as `K=V,K=V` (sorted keys): gpuLabels, else the
     nvidia.com/gpu.* / amd.com/gpu.* labels of node gpuLabelsFromNode (Helm's lookup);
     "" when neither is set. */ -}}
{{- define "mambasizer-preflight.gpuLabels" -}}
{{- $labels := dict -}}
{{- range $k, $val := (.gpuLabels | default dict) }}{{ $_ := set $labels $k (toString $val) }}{{ end -}}
{{- if and (empty $labels) .gpuLabelsFromNode -}}
{{- $node := lookup "v1" "Node" "" (toString .gpuLabelsFromNode) | default dict -}}
{{- range $k, $val := (dig "metadata" "labels" dict $node) }}{{ if or (hasPrefix "nvidia.com/gpu." $k) (hasPrefix "amd.com/gpu." $k) }}{{ $_ := set $labels $k (toString $val) }}{{ end }}{{ end -}}
{{- if empty $labels }}{{ fail (printf "mambasizer preflight: gpuLabelsFromNode: node %q has no nvidia.com/gpu.* or amd.com/gpu.* labels, or cannot be read (Helm's lookup reads nothing under helm template or --dry-run); set gpu or gpuLabels" (toString .gpuLabelsFromNode)) }}{{ end -}}
{{- end -}}
{{- $pairs := list -}}
{{- range $k, $val := $labels }}{{ $pairs = append $pairs (printf "%s=%s" $k $val) }}{{ end -}}
{{- join "," $pairs -}}
{{- end }}

{{- define "mambasizer-preflight.fullname" -}}
{{- $v := .values | default dict -}}
{{- printf "%s-%s" .root.Release.Name ($v.nameSuffix | default "mambasizer-preflight") | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mambasizer-preflight.labels" -}}
app.kubernetes.io/name: mambasizer-preflight
app.kubernetes.io/instance: {{ .root.Release.Name | quote }}
app.kubernetes.io/component: preflight
app.kubernetes.io/managed-by: {{ .root.Release.Service | quote }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" | quote }}
{{- end -}}

{{- define "mambasizer-preflight.args" -}}
{{- $v := .values | default dict -}}
{{- $require := $v.require | default dict -}}
{{- $args := list -}}
{{- if $require.maxRunningRequests }}{{ $args = concat $args (list "--require-max-running-requests" (toString (int64 $require.maxRunningRequests))) }}{{ end -}}
{{- if $require.maxTotalTokens }}{{ $args = concat $args (list "--require-max-total-tokens" (toString (int64 $require.maxTotalTokens))) }}{{ end -}}
{{- if $require.contextLength }}{{ $args = concat $args (list "--require-context-length" (toString (int64 $require.contextLength))) }}{{ end -}}
{{- if $v.sglangVersion }}{{ $args = concat $args (list "--sglang-version" (toString $v.sglangVersion)) }}{{ end -}}
{{- if $v.upgradeTo }}{{ $args = concat $args (list "--upgrade-to" (toString $v.upgradeTo)) }}{{ end -}}
{{- if and $v.upgradeTo (hasKey $v "maxCapacityLoss") }}{{ $args = concat $args (list "--max-capacity-loss" (toString $v.maxCapacityLoss)) }}{{ end -}}
{{- if and $v.upgradeTo (hasKey $v "maxSlackLoss") }}{{ $args = concat $args (list "--max-slack-loss" (toString $v.maxSlackLoss)) }}{{ end -}}
{{- if $v.url }}{{ $args = concat $args (list "--url" (toString $v.url)) }}{{ end -}}
{{- toJson $args -}}
{{- end -}}

{{- /* One side of a 1P1D pair as the PlanRequest `check` takes: a PlanRequest as given, or
the preset form turned into one (plan_pair adds --disaggregation-mode itself). */ -}}
{{- define "mambasizer-preflight.side" -}}
{{- $role := .role -}}
{{- $side := .side | default dict -}}
{{- $budgets := printf "%s.gpu (e.g. gpu: h200, planned from the GPU alone) or %s.budgetGiB (e.g. budgetGiB: 40, GiB per GPU left for the mamba/KV split)" $role $role -}}
{{- if not (kindIs "map" $side) }}
{{- fail (printf "mambasizer preflight: %s must be a mapping: a PlanRequest, or preset with %s, and sglangArgs" $role $budgets) }}
{{- end }}
{{- if $side.preset }}
{{- if and (empty $side.gpu) (not $side.budgetGiB) }}
{{- fail (printf "mambasizer preflight: %s.preset needs a budget: set %s" $role $budgets) }}
{{- end }}
{{- if and (not (empty $side.gpu)) $side.budgetGiB }}
{{- fail (printf "mambasizer preflight: %s.preset takes gpu or budgetGiB, not both: keep %s" $role $budgets) }}
{{- end }}
{{- $req := dict "model" (dict "preset" (toString $side.preset)) -}}
{{- if $side.gpu }}{{ $_ := set $req "budget" (dict "gpu" (toString $side.gpu)) }}{{ else }}{{ $_ := set $req "budget" (dict "rest_gib" $side.budgetGiB) }}{{ end -}}
{{- $args := list -}}
{{- range $side.sglangArgs }}{{ $args = append $args (toString .) }}{{ end -}}
{{- $_ := set $req "sglang_args" $args -}}
{{- toJson $req -}}
{{- else if $side.model -}}
{{- toJson $side -}}
{{- else }}
{{- fail (printf "mambasizer preflight: %s needs preset (with %s, and sglangArgs) or a PlanRequest (model, budget, server_args or sglang_args)" $role $budgets) }}
{{- end }}
{{- end -}}

{{- define "mambasizer-preflight.job" -}}
{{- $root := .root -}}
{{- $v := .values | default dict -}}
{{- if (hasKey $v "enabled" | ternary $v.enabled true) }}
{{- $image := $v.image | default dict -}}
{{- if not $image.repository }}
{{- fail "mambasizer preflight: set image.repository (an image with `mambasizer` on PATH, e.g. the mambasizer api image)" }}
{{- end }}
{{- $hasRequest := not (empty $v.request) -}}
{{- $hasPreset := not (empty $v.preset) -}}
{{- $request := $v.request -}}
{{- if or (not (empty $v.prefill)) (not (empty $v.decode)) }}
{{- if or (empty $v.prefill) (empty $v.decode) }}
{{- fail "mambasizer preflight: a 1P1D pair needs both prefill and decode (each a PlanRequest, or preset with gpu or budgetGiB, and sglangArgs)" }}
{{- end }}
{{- if or $hasRequest $hasPreset }}
{{- fail "mambasizer preflight: set prefill and decode (a 1P1D pair), or preset / request (one deployment), not both" }}
{{- end }}
{{- $request = dict "prefill" (include "mambasizer-preflight.side" (dict "role" "prefill" "side" $v.prefill) | fromJson) "decode" (include "mambasizer-preflight.side" (dict "role" "decode" "side" $v.decode) | fromJson) -}}
{{- $hasRequest = true -}}
{{- end }}
{{- /* One line per refusal, naming the field and the forms accepted (a values-schema oneOf
     would answer with a nested dump of every branch). */ -}}
{{- $forms := "preset with gpu (e.g. gpu: h200, planned from the GPU alone) or budgetGiB (e.g. budgetGiB: 40, GiB per GPU left for the mamba/KV split), and sglangArgs; or request (a PlanRequest)" -}}
{{- $pairForm := "; or prefill and decode (a 1P1D pair)" -}}
{{- if and $hasRequest $hasPreset }}
{{- fail (printf "mambasizer preflight: set preset or request, not both; the forms: %s" $forms) }}
{{- end }}
{{- if not (or $hasRequest $hasPreset) }}
{{- fail (printf "mambasizer preflight: set preset or request; the forms: %s%s" $forms $pairForm) }}
{{- end }}
{{- /* gpuLabels / gpuLabelsFromNode stand for gpu: the node's labels name the part. */ -}}
{{- $gpuLabels := include "mambasizer-preflight.gpuLabels" $v -}}
{{- if and $hasPreset (not (empty $v.gpu)) $gpuLabels }}
{{- fail "mambasizer preflight: preset takes gpu or gpuLabels (gpuLabelsFromNode), not both" }}
{{- end }}
{{- if and $hasPreset (empty $v.gpu) (not $v.budgetGiB) (not $gpuLabels) }}
{{- fail "mambasizer preflight: preset needs a budget: set gpu (e.g. gpu: h200, planned from the GPU alone) or budgetGiB (e.g. budgetGiB: 40, GiB per GPU left for the mamba/KV split)" }}
{{- end }}
{{- if and $hasPreset (not (empty $v.gpu)) $v.budgetGiB }}
{{- fail "mambasizer preflight: preset takes gpu or budgetGiB, not both: keep gpu (e.g. gpu: h200, planned from the GPU alone) or budgetGiB (e.g. budgetGiB: 40, GiB per GPU left for the mamba/KV split)" }}
{{- end }}
{{- $extra := include "mambasizer-preflight.args" . | fromJsonArray -}}
{{- $ctx := . }}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "mambasizer-preflight.fullname" $ctx }}
  namespace: {{ $root.Release.Namespace | quote }}
  labels:
    {{- include "mambasizer-preflight.labels" $ctx | nindent 4 }}
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: {{ (hasKey $v "hookWeight" | ternary $v.hookWeight -5) | toString | quote }}
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  backoffLimit: 0
  activeDeadlineSeconds: {{ (hasKey $v "activeDeadlineSeconds" | ternary $v.activeDeadlineSeconds 300) | int64 }}
  template:
    metadata:
      labels:
        {{- include "mambasizer-preflight.labels" $ctx | nindent 8 }}
      {{- with $v.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
      {{- with $v.serviceAccountName }}
      serviceAccountName: {{ . | quote }}
      {{- end }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 10001
        runAsGroup: 10001
        seccompProfile:
          type: RuntimeDefault
      {{- with $v.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: preflight
          image: {{ printf "%s:%s" $image.repository (toString ($image.tag | default $root.Chart.AppVersion | default "latest")) | quote }}
          imagePullPolicy: {{ $image.pullPolicy | default "IfNotPresent" }}
          {{- if $hasRequest }}
          # The PlanRequest travels in an env var and reaches `mambasizer check -` on stdin.
          command:
            - /bin/sh
            - -c
            - printf '%s' "$MAMBASIZER_REQUEST_JSON" | exec mambasizer check - "$@"
            - mambasizer-check
            {{- range $extra }}
            - {{ . | quote }}
            {{- end }}
          {{- else }}
          command:
            - mambasizer
          args:
            - check
            - --preset
            - {{ $v.preset | quote }}
            {{- if $v.gpu }}
            - --gpu
            - {{ $v.gpu | toString | quote }}
            {{- else if $gpuLabels }}
            - --gpu-labels
            - {{ $gpuLabels | quote }}
            {{- else }}
            - --budget-gib
            - {{ $v.budgetGiB | toString | quote }}
            {{- end }}
            {{- range $extra }}
            - {{ . | quote }}
            {{- end }}
            - "--"
            {{- range $v.sglangArgs }}
            - {{ . | toString | quote }}
            {{- end }}
          {{- end }}
          env:
            - name: PYTHONDONTWRITEBYTECODE
              value: "1"
            {{- if $hasRequest }}
            - name: MAMBASIZER_REQUEST_JSON
              value: {{ toJson $request | quote }}
            {{- end }}
          terminationMessagePath: /dev/termination-log
          terminationMessagePolicy: FallbackToLogsOnError
          {{- with $v.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            runAsNonRoot: true
            capabilities:
              drop:
                - ALL
          volumeMounts:
            - name: tmp
              mountPath: /tmp
      volumes:
        - name: tmp
          emptyDir: {}
{{- end }}
{{- end -}}
