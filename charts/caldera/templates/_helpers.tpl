{{- define "caldera.labels" -}}
app.kubernetes.io/name: caldera-scheduler
app.kubernetes.io/part-of: caldera
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "caldera.selectorLabels" -}}
app.kubernetes.io/name: caldera-scheduler
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "caldera.fullname" -}}
{{- if eq .Release.Name "caldera" -}}caldera-scheduler{{- else -}}{{ printf "%s-caldera-scheduler" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}
