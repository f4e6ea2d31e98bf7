{{/* Chart name, overridable. */}}
{{- define "compactor.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-wide base name; components append -api, -worker, ... (so kept to 52 characters). */}}
{{- define "compactor.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "compactor.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels every resource carries. */}}
{{- define "compactor.labels" -}}
helm.sh/chart: {{ include "compactor.chart" . }}
app.kubernetes.io/part-of: compactor
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Selector labels of one component. Call with (dict "root" $ "component" "api").
Never change these on upgrade: a Deployment's selector is immutable.
*/}}
{{- define "compactor.selectorLabels" -}}
app.kubernetes.io/name: {{ include "compactor.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Labels of one component's resources and pods: the common ones plus its selector. */}}
{{- define "compactor.componentLabels" -}}
{{ include "compactor.labels" .root }}
{{ include "compactor.selectorLabels" . }}
{{- end }}

{{/* Name of the Secret the pods read: the existing one, or the chart's. */}}
{{- define "compactor.secretName" -}}
{{- if .Values.secret.existingSecret }}
{{- .Values.secret.existingSecret }}
{{- else }}
{{- include "compactor.fullname" . }}
{{- end }}
{{- end }}

{{/* A component's image. Call with (dict "root" $ "image" .Values.api.image). */}}
{{- define "compactor.image" -}}
{{- $tag := .image.tag | default .root.Values.image.tag | default .root.Chart.AppVersion }}
{{- $registry := .root.Values.image.registry | trimSuffix "/" }}
{{- if $registry }}
{{- printf "%s/%s:%s" $registry .image.repository (toString $tag) }}
{{- else }}
{{- printf "%s:%s" .image.repository (toString $tag) }}
{{- end }}
{{- end }}

{{/* Whole seconds in a number of milliseconds, rounded up. */}}
{{- define "compactor.ceilSeconds" -}}
{{- $ms := int64 . }}
{{- div (add $ms 999) 1000 }}
{{- end }}

{{/*
A shutdown timeout in ms, checked: a positive whole number. Call with (list "api" .Values.api.shutdownTimeoutMs).
*/}}
{{- define "compactor.shutdownTimeoutMs" -}}
{{- $component := index . 0 }}
{{- $ms := index . 1 }}
{{- $number := or (kindIs "float64" $ms) (kindIs "int64" $ms) (kindIs "int" $ms) }}
{{- $valid := false }}
{{- if $number }}
{{- $valid = and (gt (float64 $ms) 0.0) (eq (float64 (int64 $ms)) (float64 $ms)) }}
{{- end }}
{{- if not $valid }}
{{- fail (printf "%s.shutdownTimeoutMs must be a positive whole number of milliseconds, got %v" $component $ms) }}
{{- end }}
{{- int64 $ms }}
{{- end }}

{{/*
terminationGracePeriodSeconds: a preStop sleep, then the process's own shutdown timeout (rounded up
to seconds), then a margin, so that the kubelet's SIGKILL never cuts the drain short.
Call with (list "worker" shutdownTimeoutMs preStopSleepSeconds marginSeconds).
*/}}
{{- define "compactor.gracePeriodSeconds" -}}
{{- $ms := include "compactor.shutdownTimeoutMs" (list (index . 0) (index . 1)) }}
{{- add (include "compactor.ceilSeconds" $ms) (int64 (index . 2)) (int64 (index . 3)) }}
{{- end }}

{{/*
Plain env from maps, refusing the variables the chart sets itself.
Call with (dict "maps" (list .Values.env .Values.api.env) "reserved" (list "PORT") "where" "api").
*/}}
{{- define "compactor.envFromMaps" -}}
{{- $merged := dict }}
{{- range .maps }}
{{- $merged = merge (deepCopy .) $merged }}
{{- end }}
{{- range $name, $value := $merged }}
{{- if has $name $.reserved }}
{{- fail (printf "%s is set by the chart for the %s (see values.yaml); remove it from env" $name $.where) }}
{{- end }}
- name: {{ $name }}
  value: {{ include "compactor.envValue" $value | quote }}
{{- end }}
{{- end }}

{{/*
Annotations of a pod that reads the Secret: the chart's Secret's checksum (so pods restart when
its values change; an existing Secret is yours to roll) and the component's own.
Call with (list $ .Values.api.podAnnotations).
*/}}
{{- define "compactor.podAnnotations" -}}
{{- $root := index . 0 }}
{{- if not $root.Values.secret.existingSecret }}
checksum/secret: {{ toJson $root.Values.secret.values | sha256sum }}
{{- end }}
{{- with index . 1 }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
An env value as a string. Numbers from values files arrive as float64, which would print
3600000 as "3.6e+06": whole numbers are printed as integers.
*/}}
{{- define "compactor.envValue" -}}
{{- $text := toString . }}
{{- if kindIs "float64" . }}
{{- if eq (float64 (int64 .)) . }}
{{- $text = toString (int64 .) }}
{{- end }}
{{- end }}
{{- $text }}
{{- end }}
