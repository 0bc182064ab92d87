{{/* The agent's name: its ServiceAccount, Deployment, Service and Pods. */}}
{{- define "reconcile-agent.fullname" -}}
{{- printf "%s-agent" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "reconcile-agent.selector" -}}
app.kubernetes.io/name: reconcile-agent
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "reconcile-agent.labels" -}}
{{ include "reconcile-agent.selector" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The leader-election Lease of the agent's replicas (controllers.agent.run.agent_lease_name). */}}
{{- define "reconcile-agent.lease" -}}
{{- printf "karmada-agent-%s" .Values.clusterName -}}
{{- end -}}

{{/* Combinations the schema cannot word well: refused at render time with the reason. */}}
{{- define "reconcile-agent.validate" -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) -}}
{{- fail (printf "replicas: %d needs leaderElection.enabled: true (replicas without it would all write)" (int .Values.replicas)) -}}
{{- end -}}
{{- end -}}
