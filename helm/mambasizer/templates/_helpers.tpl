{{/* Chart name, truncated to the 63 characters Kubernetes names allow. */}}
{{- define "mambasizer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: <release>-<chart>, or the release name when it already holds the chart name. */}}
{{- define "mambasizer.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mambasizer.workerFullname" -}}
{{- printf "%s-worker" (include "mambasizer.fullname" . | trunc 56 | trimSuffix "-") }}
{{- end }}

{{- define "mambasizer.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Common labels. */}}
{{- define "mambasizer.labels" -}}
helm.sh/chart: {{ include "mambasizer.chart" . }}
app.kubernetes.io/name: {{ include "mambasizer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: mambasizer
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels; call with (dict "root" $ "component" "api"). */}}
{{- define "mambasizer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mambasizer.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- /* An image's tag (appVersion when empty), pinned by its digest when one is given: "0.1.0@sha256:...". */ -}}
{{- define "mambasizer.imageTag" -}}
{{- $tag := .image.tag | default .root.Chart.AppVersion }}
{{- if .image.digest }}{{ printf "%s@%s" $tag .image.digest }}{{ else }}{{ $tag }}{{ end }}
{{- end }}

{{- define "mambasizer.image" -}}
{{- printf "%s:%s" .Values.image.repository (include "mambasizer.imageTag" (dict "root" . "image" .Values.image)) }}
{{- end }}

{{- define "mambasizer.workerImage" -}}
{{- printf "%s:%s" .Values.worker.image.repository (include "mambasizer.imageTag" (dict "root" . "image" .Values.worker.image)) }}
{{- end }}

{{- define "mambasizer.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mambasizer.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "mambasizer.workerSecretName" -}}
{{- if .Values.worker.auth.existingSecret }}
{{- .Values.worker.auth.existingSecret }}
{{- else }}
{{- printf "%s-token" (include "mambasizer.workerFullname" .) }}
{{- end }}
{{- end }}

{{- define "mambasizer.workerURL" -}}
{{- printf "http://%s.%s.svc:%d" (include "mambasizer.workerFullname" .) .Release.Namespace (int .Values.worker.service.port) }}
{{- end }}

{{- define "mambasizer.deploymentsPath" -}}
/etc/mambasizer/deployments.yaml
{{- end }}

{{- define "mambasizer.trialSecretName" -}}
{{- if .Values.trials.clientToken.existingSecret }}
{{- .Values.trials.clientToken.existingSecret }}
{{- else }}
{{- printf "%s-trial-token" (include "mambasizer.fullname" . | trunc 51 | trimSuffix "-") }}
{{- end }}
{{- end }}

{{- /* Tokens travel as read-only Secret files, not environment variables. */ -}}
{{- define "mambasizer.workerTokenDir" -}}
/var/run/secrets/mambasizer/worker
{{- end }}

{{- define "mambasizer.trialTokenDir" -}}
/var/run/secrets/mambasizer/trial
{{- end }}

{{- /*
The token of a chart-generated Secret; call with (dict "root" $ "name" <Secret> "key" <key>
"value" <explicit token or "">). An explicit value wins; otherwise the token the live
Secret already holds (lookup, so `helm upgrade` keeps it); otherwise a new random one.
The answer is cached for the rest of the render, so the Secret and the pods' checksum
annotation see the same token even when it is freshly generated. Offline renders (helm
template, Argo CD) cannot look up: they generate anew each time, hence existingSecret.
*/ -}}
{{- define "mambasizer.generatedToken" -}}
{{- $cache := .root.Values._mambasizerTokens | default dict }}
{{- $_ := set .root.Values "_mambasizerTokens" $cache }}
{{- if not (hasKey $cache .name) }}
{{- $token := .value }}
{{- if not $token }}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace .name }}
{{- if and $existing (hasKey ($existing.data | default dict) .key) }}
{{- $token = index $existing.data .key | b64dec }}
{{- else }}
{{- $token = randAlphaNum 48 }}
{{- end }}
{{- end }}
{{- $_ := set $cache .name $token }}
{{- end }}
{{- index $cache .name }}
{{- end }}

{{- /*
What the pods' checksum/<token> annotation hashes, so they roll when the token changes;
call with (dict "root" $ "auth" <worker.auth or trials.clientToken> "name" <Secret name>).
A chart-generated token is hashed itself; an existingSecret's token is hashed when the
cluster can be read (helm install/upgrade), its name and key otherwise.
*/ -}}
{{- define "mambasizer.tokenChecksum" -}}
{{- $auth := .auth }}
{{- if $auth.existingSecret }}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace $auth.existingSecret }}
{{- $data := ($existing | default dict).data | default dict }}
{{- printf "%s/%s/%s" $auth.existingSecret $auth.secretKey (index $data $auth.secretKey | default "") | sha256sum }}
{{- else }}
{{- $token := include "mambasizer.generatedToken" (dict "root" .root "name" .name "key" $auth.secretKey "value" $auth.token) }}
{{- printf "%s/%s/%s" .name $auth.secretKey $token | sha256sum }}
{{- end }}
{{- end }}

{{- /*
topologySpreadConstraints with the component's selector labels filled in where an entry
has no labelSelector; call with (dict "root" $ "component" "api" "constraints" <list>).
*/ -}}
{{- define "mambasizer.topologySpreadConstraints" -}}
{{- $out := list }}
{{- range .constraints }}
{{- $c := deepCopy . }}
{{- if not $c.labelSelector }}
{{- $_ := set $c "labelSelector" (dict "matchLabels" (include "mambasizer.selectorLabels" (dict "root" $.root "component" $.component) | fromYaml)) }}
{{- end }}
{{- $out = append $out $c }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{- /* A Prometheus duration ("1m30s", "500ms", "2h") in milliseconds. */ -}}
{{- define "mambasizer.durationMs" -}}
{{- $units := dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000 "d" 86400000 "w" 604800000 "y" 31536000000 }}
{{- $total := 0 }}
{{- range regexFindAll "[0-9]+(ms|[smhdwy])" . -1 }}
{{- $n := regexFind "^[0-9]+" . }}
{{- $total = add $total (mul (int64 $n) (get $units (trimPrefix $n .))) }}
{{- end }}
{{- $total }}
{{- end }}

{{- /* A Kubernetes memory quantity ("512Mi", "8G", "1073741824") in bytes; "" when not a plain one. */ -}}
{{- define "mambasizer.quantityBytes" -}}
{{- $q := toString . }}
{{- $m := regexFind "^[0-9]+(\\.[0-9]+)?" $q }}
{{- $units := dict "" 1.0 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 }}
{{- $suffix := trimPrefix $m $q }}
{{- if and $m (hasKey $units $suffix) }}
{{- mulf (float64 $m) (get $units $suffix) }}
{{- end }}
{{- end }}
