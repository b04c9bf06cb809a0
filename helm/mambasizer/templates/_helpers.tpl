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

{{- define "mambasizer.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{- define "mambasizer.workerImage" -}}
{{- printf "%s:%s" .Values.worker.image.repository (.Values.worker.image.tag | default .Chart.AppVersion) }}
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
