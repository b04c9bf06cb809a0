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

`values` keys (all optional except image.repository and one of request / preset / modelPath):
  enabled                 bool    render nothing when false (default true)
  image.repository/tag/pullPolicy  an image with `mambasizer` on PATH (the api target)
  hookWeight              int     helm.sh/hook-weight (default -5)
  activeDeadlineSeconds   int     Job deadline (default 300)
  request                 object  a PlanRequest, or {"prefill": ..., "decode": ...} (form 1)
  prefill, decode                 form 3, a 1P1D pair checked as a whole: each side a PlanRequest
                                  or {preset | modelPath, gpu [gpuMemoryMib] | gpuMemoryMib |
                                  budgetGiB, sglangArgs}; the install fails when either side would
                                  not start (requirements are the decode side's)
  preset, gpu, sglangArgs         form 2: `check --preset P --gpu G -- ARGS` (planned from the
                                  GPU alone: `mambasizer check --help`, GET /v1/gpus)
  modelPath                       the launch's --model-path (a preset name, a checkpoint directory
                                  (see modelVolume), or an HF repo id: the HF cache, else the Hub),
                                  in place of preset or beside it (then both must name one
                                  checkpoint): `check --gpu G -- --model-path M ARGS`; a
                                  `--model-path` inside sglangArgs does the same
  gpuMemoryMib            int     the GPU's capacity in MiB (`check --gpu-memory-mib`, nvidia-smi
                                  memory.total; rocminfo Pool 1 KB / 1024): with gpu, that part at
                                  this capacity (needed where the catalog has it unconfirmed,
                                  e.g. mi355x); alone, Hopper's rules
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
  modelVolume.claimName / mountPath   the deployment's model PVC, mounted read-only at mountPath
                                  (where SGLang's pod mounts it): modelPath (or --model-path) a
                                  directory under it is read as SGLang reads it (config.json, the
                                  quant config, safetensors headers; never a weight)
  hfTokenSecret.name / key        the Secret (and its key) holding the deployment's Hugging Face
                                  token: env HF_TOKEN from it, for a repo id read from the Hub
                                  (HF_HOME is then /tmp/huggingface); the token is never rendered
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
{{- $budgets := printf "%s.gpu (e.g. gpu: h200, planned from the GPU alone; with gpuMemoryMib where its capacity is unconfirmed) or %s.budgetGiB (e.g. budgetGiB: 40, GiB per GPU left for the mamba/KV split)" $role $role -}}
{{- if not (kindIs "map" $side) }}
{{- fail (printf "mambasizer preflight: %s must be a mapping: a PlanRequest, or preset (or modelPath) with %s, and sglangArgs" $role $budgets) }}
{{- end }}
{{- if or $side.preset $side.modelPath (include "mambasizer-preflight.namesModelPath" $side.sglangArgs) }}
{{- $gpuBudget := or (not (empty $side.gpu)) $side.gpuMemoryMib -}}
{{- $what := $side.preset | empty | ternary ($side.modelPath | empty | ternary "sglangArgs (its --model-path)" "modelPath") "preset" -}}
{{- if and (not $gpuBudget) (not $side.budgetGiB) }}
{{- fail (printf "mambasizer preflight: %s.%s needs a budget: set %s" $role $what $budgets) }}
{{- end }}
{{- if and $gpuBudget $side.budgetGiB }}
{{- fail (printf "mambasizer preflight: %s.%s takes gpu or budgetGiB, not both: keep %s" $role $what $budgets) }}
{{- end }}
{{- $req := dict -}}
{{- if $side.preset }}{{ $_ := set $req "model" (dict "preset" (toString $side.preset)) }}{{ end -}}
{{- if $gpuBudget -}}
{{- $budget := dict -}}
{{- if $side.gpu }}{{ $_ := set $budget "gpu" (toString $side.gpu) }}{{ end -}}
{{- if $side.gpuMemoryMib }}{{ $_ := set $budget "gpu_memory_mib" (int64 $side.gpuMemoryMib) }}{{ end -}}
{{- $_ := set $req "budget" $budget -}}
{{- else }}{{ $_ := set $req "budget" (dict "rest_gib" $side.budgetGiB) }}{{ end -}}
{{- $args := list -}}
{{- if $side.modelPath }}{{ $args = list "--model-path" (toString $side.modelPath) }}{{ end -}}
{{- range $side.sglangArgs }}{{ $args = append $args (toString .) }}{{ end -}}
{{- $_ := set $req "sglang_args" $args -}}
{{- toJson $req -}}
{{- else if $side.model -}}
{{- toJson $side -}}
{{- else }}
{{- fail (printf "mambasizer preflight: %s needs preset or modelPath (with %s, and sglangArgs) or a PlanRequest (model, budget, server_args or sglang_args)" $role $budgets) }}
{{- end }}
{{- end -}}

{{- /* "true" when launch arguments name the model themselves (--model-path / --model, as
SGLang spells it), so the launch form needs no preset. */ -}}
{{- define "mambasizer-preflight.namesModelPath" -}}
{{- $found := false -}}
{{- range . }}{{ $a := toString . }}{{ if or (eq $a "--model-path") (eq $a "--model") (hasPrefix "--model-path=" $a) (hasPrefix "--model=" $a) }}{{ $found = true }}{{ end }}{{ end -}}
{{- if $found }}true{{ end -}}
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
{{- /* The launch form: a model from preset, modelPath or the launch line's own --model-path. */ -}}
{{- $hasPreset := or (not (empty $v.preset)) (not (empty $v.modelPath)) (not (empty (include "mambasizer-preflight.namesModelPath" $v.sglangArgs))) -}}
{{- $gpuBudget := or (not (empty $v.gpu)) $v.gpuMemoryMib -}}
{{- $request := $v.request -}}
{{- if or (not (empty $v.prefill)) (not (empty $v.decode)) }}
{{- if or (empty $v.prefill) (empty $v.decode) }}
{{- fail "mambasizer preflight: a 1P1D pair needs both prefill and decode (each a PlanRequest, or preset or modelPath with gpu or budgetGiB, and sglangArgs)" }}
{{- end }}
{{- if or $hasRequest $hasPreset }}
{{- fail "mambasizer preflight: set prefill and decode (a 1P1D pair), or preset / request (one deployment), not both" }}
{{- end }}
{{- $request = dict "prefill" (include "mambasizer-preflight.side" (dict "role" "prefill" "side" $v.prefill) | fromJson) "decode" (include "mambasizer-preflight.side" (dict "role" "decode" "side" $v.decode) | fromJson) -}}
{{- $hasRequest = true -}}
{{- end }}
{{- /* One line per refusal, naming the field and the forms accepted (a values-schema oneOf
     would answer with a nested dump of every branch). */ -}}
{{- $budgets := "gpu (e.g. gpu: h200, planned from the GPU alone; with gpuMemoryMib where its capacity is unconfirmed) or budgetGiB (e.g. budgetGiB: 40, GiB per GPU left for the mamba/KV split)" -}}
{{- $forms := printf "preset or modelPath (or --model-path in sglangArgs) with %s, and sglangArgs; or request (a PlanRequest)" $budgets -}}
{{- $pairForm := "; or prefill and decode (a 1P1D pair)" -}}
{{- if and $hasRequest $hasPreset }}
{{- fail (printf "mambasizer preflight: set preset (or modelPath) or request, not both; the forms: %s" $forms) }}
{{- end }}
{{- if not (or $hasRequest $hasPreset) }}
{{- fail (printf "mambasizer preflight: set preset (or modelPath) or request; the forms: %s%s" $forms $pairForm) }}
{{- end }}
{{- $what := $v.preset | empty | ternary ($v.modelPath | empty | ternary "sglangArgs (its --model-path)" "modelPath") "preset" -}}
{{- /* gpuLabels / gpuLabelsFromNode stand for gpu: the node's labels name the part. */ -}}
{{- $gpuLabels := include "mambasizer-preflight.gpuLabels" $v -}}
{{- if and $hasPreset (not (empty $v.gpu)) $gpuLabels }}
{{- fail (printf "mambasizer preflight: %s takes gpu or gpuLabels (gpuLabelsFromNode), not both" $what) }}
{{- end }}
{{- if and $hasPreset (not $gpuBudget) (not $v.budgetGiB) (not $gpuLabels) }}
{{- fail (printf "mambasizer preflight: %s needs a budget: set %s" $what $budgets) }}
{{- end }}
{{- if and $hasPreset (or $gpuBudget $gpuLabels) $v.budgetGiB }}
{{- fail (printf "mambasizer preflight: %s takes gpu or budgetGiB, not both: keep %s" $what $budgets) }}
{{- end }}
{{- $extra := include "mambasizer-preflight.args" . | fromJsonArray -}}
{{- $volume := $v.modelVolume | default dict -}}
{{- /* Set when either field is: values files carry both keys empty by default. */ -}}
{{- $hasVolume := or (not (empty $volume.claimName)) (not (empty $volume.mountPath)) -}}
{{- if and $hasVolume (or (empty $volume.claimName) (empty $volume.mountPath)) }}
{{- fail "mambasizer preflight: modelVolume needs claimName (the deployment's model PVC) and mountPath (where its pod mounts it, e.g. /models), with modelPath a directory under mountPath" }}
{{- end }}
{{- $token := $v.hfTokenSecret | default dict -}}
{{- $hasToken := or (not (empty $token.name)) (not (empty $token.key)) -}}
{{- if and $hasToken (or (empty $token.name) (empty $token.key)) }}
{{- fail "mambasizer preflight: hfTokenSecret needs name (the deployment's Secret) and key (the key holding the Hugging Face token, e.g. HF_TOKEN)" }}
{{- end }}
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
            {{- if $v.preset }}
            - --preset
            - {{ $v.preset | quote }}
            {{- end }}
            {{- if $v.gpu }}
            - --gpu
            - {{ $v.gpu | toString | quote }}
            {{- else if $gpuLabels }}
            - --gpu-labels
            - {{ $gpuLabels | quote }}
            {{- end }}
            {{- if $v.gpuMemoryMib }}
            - --gpu-memory-mib
            - {{ int64 $v.gpuMemoryMib | toString | quote }}
            {{- end }}
            {{- if not (or $gpuBudget $gpuLabels) }}
            - --budget-gib
            - {{ $v.budgetGiB | toString | quote }}
            {{- end }}
            {{- range $extra }}
            - {{ . | quote }}
            {{- end }}
            - "--"
            {{- if $v.modelPath }}
            - --model-path
            - {{ $v.modelPath | toString | quote }}
            {{- end }}
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
            {{- if $hasToken }}
            # The deployment's token, from its Secret: never in the rendered manifest.
            - name: HF_TOKEN
              valueFrom:
                secretKeyRef:
                  name: {{ $token.name | toString | quote }}
                  key: {{ $token.key | toString | quote }}
            # huggingface_hub keeps what it reads under HF_HOME; the root filesystem is read-only.
            - name: HF_HOME
              value: /tmp/huggingface
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
            {{- if $hasVolume }}
            - name: model
              mountPath: {{ $volume.mountPath | toString | quote }}
              readOnly: true
            {{- end }}
      volumes:
        - name: tmp
          emptyDir: {}
        {{- if $hasVolume }}
        # The deployment's own model volume, read-only: the preflight reads what SGLang loads.
        - name: model
          persistentVolumeClaim:
            claimName: {{ $volume.claimName | toString | quote }}
            readOnly: true
        {{- end }}
{{- end }}
{{- end -}}
