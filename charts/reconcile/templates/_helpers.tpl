{{/* The controller-manager's name: its ServiceAccount, Deployment, Services and Pods. */}}
{{- define "reconcile.fullname" -}}
{{- printf "%s-controller-manager" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "reconcile.selector" -}}
app.kubernetes.io/name: reconcile-controller-manager
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "reconcile.labels" -}}
{{ include "reconcile.selector" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Combinations the schema cannot word well: refused at render time with the reason. */}}
{{- define "reconcile.validate" -}}
{{- if and (eq .Values.shards "auto") (not .Values.leaderElection.enabled) -}}
{{- fail "shards: \"auto\" needs leaderElection.enabled: true (the sharder runs on the leader)" -}}
{{- end -}}
{{- if and .Values.webhook.enabled (not .Values.webhook.caBundle) (not .Values.webhook.certManager.enabled) -}}
{{- fail "webhook.enabled needs webhook.caBundle (the CA of the serving certificate) or webhook.certManager.enabled" -}}
{{- end -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) -}}
{{- fail (printf "replicas: %d needs leaderElection.enabled: true (replicas without it would all write)" (int .Values.replicas)) -}}
{{- end -}}
{{- end -}}

{{- define "reconcile.webhookSelector" -}}
app.kubernetes.io/name: reconcile-webhook
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "reconcile.webhookLabels" -}}
{{ include "reconcile.webhookSelector" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "reconcile.webhookCertSecret" -}}
{{- .Values.webhook.certificate.secretName | default (printf "%s-webhook-cert" .Release.Name) -}}
{{- end -}}
