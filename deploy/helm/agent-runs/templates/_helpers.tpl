{{/* Names, labels and the pieces the API, the workers and the migration share. */}}

{{- define "agent-runs.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "agent-runs.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object; pass (dict "root" $ "component" "api"). */}}
{{- define "agent-runs.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
{{ include "agent-runs.selectorLabels" . }}
{{- end -}}

{{- define "agent-runs.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agent-runs.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "agent-runs.image" -}}
{{- printf "%s:%s" (required "image.repository is required: the image built from the repository's Dockerfile" .Values.image.repository) (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "agent-runs.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "agent-runs.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* A variable from the service's Secret: (dict "root" $ "key" "DATABASE_URL" "optional" false). */}}
{{- define "agent-runs.secretEnv" -}}
- name: {{ .key }}
  valueFrom:
    secretKeyRef:
      name: {{ required "secrets.name is required: the Secret with DATABASE_URL, SECRETS_ENCRYPTION_KEY and METRICS_BEARER_TOKEN" .root.Values.secrets.name }}
      key: {{ .key }}
      {{- if .optional }}
      optional: true
      {{- end }}
{{- end -}}

{{/* Where the TLS files are in every container that mounts them. */}}
{{- define "agent-runs.temporalClientDir" -}}/etc/agent-runs/temporal-client{{- end -}}
{{- define "agent-runs.temporalCADir" -}}/etc/agent-runs/temporal-ca{{- end -}}
{{- define "agent-runs.postgresCADir" -}}/etc/agent-runs/postgres-ca{{- end -}}

{{/* The database and Temporal: what the migration needs, and the API and the workers too. */}}
{{- define "agent-runs.connectionEnv" -}}
{{- $t := .Values.temporal -}}
{{ include "agent-runs.secretEnv" (dict "root" . "key" "DATABASE_URL") }}
- name: TEMPORAL_ADDRESS
  value: {{ required "temporal.address is required: host:port of the Temporal frontend" $t.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ $t.namespace | quote }}
- name: TEMPORAL_TASK_QUEUE
  value: {{ $t.taskQueue | quote }}
{{- if $t.tls.enabled }}
- name: TEMPORAL_TLS
  value: "true"
{{- if $t.tls.clientCertSecret }}
- name: TEMPORAL_TLS_CLIENT_CERT_PATH
  value: {{ include "agent-runs.temporalClientDir" . }}/tls.crt
- name: TEMPORAL_TLS_CLIENT_KEY_PATH
  value: {{ include "agent-runs.temporalClientDir" . }}/tls.key
{{- end }}
{{- if $t.tls.serverCASecret }}
- name: TEMPORAL_TLS_SERVER_CA_CERT_PATH
  value: {{ include "agent-runs.temporalCADir" . }}/ca.crt
{{- end }}
{{- if $t.tls.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ $t.tls.serverName | quote }}
{{- end }}
{{- end }}
{{- if $t.apiKey }}
{{ include "agent-runs.secretEnv" (dict "root" . "key" "TEMPORAL_API_KEY") }}
{{- end }}
{{- range $name, $value := .Values.config }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end -}}

{{/* What the API and the workers share beyond the connections: keys, metrics, the bucket. */}}
{{- define "agent-runs.serviceEnv" -}}
{{- $s3 := .Values.objectStore.s3 -}}
{{ include "agent-runs.secretEnv" (dict "root" . "key" "SECRETS_ENCRYPTION_KEY") }}
{{ include "agent-runs.secretEnv" (dict "root" . "key" "SECRETS_ENCRYPTION_KEYS" "optional" true) }}
{{ include "agent-runs.secretEnv" (dict "root" . "key" "METRICS_BEARER_TOKEN") }}
- name: HOST
  value: 0.0.0.0
- name: PUBLIC_URL
  value: {{ required "publicUrl is required: the API's URL as clients reach it" .Values.publicUrl | quote }}
- name: OBJECT_STORE
  value: s3
- name: OBJECT_STORE_S3_BUCKET
  value: {{ required "objectStore.s3.bucket is required: the bucket for runs' files" $s3.bucket | quote }}
{{- range $name, $value := dict "OBJECT_STORE_S3_PREFIX" $s3.prefix "OBJECT_STORE_S3_ENDPOINT" $s3.endpoint "OBJECT_STORE_S3_REGION" $s3.region "OBJECT_STORE_S3_FORCE_PATH_STYLE" $s3.forcePathStyle }}
{{- if $value }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end }}
{{ include "agent-runs.secretEnv" (dict "root" . "key" "AWS_ACCESS_KEY_ID" "optional" true) }}
{{ include "agent-runs.secretEnv" (dict "root" . "key" "AWS_SECRET_ACCESS_KEY" "optional" true) }}
{{- end -}}

{{/* The TLS Secrets as volumes, and where they are mounted (read-only). */}}
{{- define "agent-runs.tlsVolumes" -}}
{{- with .Values.temporal.tls.clientCertSecret }}
- name: temporal-client
  secret:
    secretName: {{ . }}
    defaultMode: 0440
{{- end }}
{{- with .Values.temporal.tls.serverCASecret }}
- name: temporal-ca
  secret:
    secretName: {{ . }}
    items:
      - key: ca.crt
        path: ca.crt
{{- end }}
{{- with .Values.postgres.tls.caSecret }}
- name: postgres-ca
  secret:
    secretName: {{ . }}
    items:
      - key: ca.crt
        path: ca.crt
{{- end }}
{{- end -}}

{{- define "agent-runs.tlsVolumeMounts" -}}
{{- if .Values.temporal.tls.clientCertSecret }}
- name: temporal-client
  mountPath: {{ include "agent-runs.temporalClientDir" . }}
  readOnly: true
{{- end }}
{{- if .Values.temporal.tls.serverCASecret }}
- name: temporal-ca
  mountPath: {{ include "agent-runs.temporalCADir" . }}
  readOnly: true
{{- end }}
{{- if .Values.postgres.tls.caSecret }}
- name: postgres-ca
  mountPath: {{ include "agent-runs.postgresCADir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{/*
The API's and the migration's pod: the image's non-root user (uid 1000, `node`), nothing else.
*/}}
{{- define "agent-runs.nonRootPodSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
fsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "agent-runs.nonRootContainerSecurityContext" -}}
privileged: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}
