{{/*
toolexec.labels: the labels of every object and pod template, as
deploy/k8s gives them (name, component, part-of, version), and Helm's
own. Call with (dict "name" "toolexec-executor" "component" "executor" "ctx" $).
*/}}
{{- define "toolexec.labels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: toolexec
app.kubernetes.io/version: {{ include "toolexec.version" .ctx | quote }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version }}
{{- end }}

{{/* toolexec.version: the image's tag, which is the version. */}}
{{- define "toolexec.version" -}}
{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* toolexec.image: the image by tag, and digest when given. */}}
{{- define "toolexec.image" -}}
{{ .Values.image.repository }}:{{ include "toolexec.version" . }}{{ with .Values.image.digest }}@{{ . }}{{ end }}
{{- end }}

{{/*
toolexec.configChecksum: a hash of the ConfigMaps the pods mount, as a
pod template annotation: a changed configuration rolls the pods (what
kustomize's generated names do for the base).
*/}}
{{- define "toolexec.configChecksum" -}}
checksum/config: {{ include (print .Template.BasePath "/configmaps.yaml") . | sha256sum }}
{{- end }}

{{/* toolexec.env: the environment every long-running component shares. */}}
{{- define "toolexec.env" -}}
- name: KAFKA_BOOTSTRAP_SERVERS
  valueFrom:
    configMapKeyRef:
      name: toolexec-kafka
      key: bootstrap-servers
# The container's memory limit: the Go runtime takes 90% of it as its
# soft limit (internal/gctune, ApplyMemoryLimit).
- name: TOOLEXEC_MEMORY_LIMIT
  valueFrom:
    resourceFieldRef:
      resource: limits.memory
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* toolexec.podSecurity: the pod's security context (restricted). */}}
{{- define "toolexec.podSecurity" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* toolexec.containerSecurity: the container's security context. */}}
{{- define "toolexec.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{/*
toolexec.spread: topology spread of a component's pods over zones and
hosts. Call with (dict "name" "toolexec-executor" "hosts" "ScheduleAnyway").
*/}}
{{- define "toolexec.spread" -}}
- maxSkew: 1
  topologyKey: topology.kubernetes.io/zone
  whenUnsatisfiable: ScheduleAnyway
  labelSelector:
    matchLabels:
      app.kubernetes.io/name: {{ .name }}
- maxSkew: 1
  topologyKey: kubernetes.io/hostname
  whenUnsatisfiable: {{ .hosts }}
  labelSelector:
    matchLabels:
      app.kubernetes.io/name: {{ .name }}
{{- end }}

{{/*
toolexec.kafkaCredentials: the projected volume of a role's password and
the brokers' CA. Call with (dict "role" "executor" "ctx" $).
*/}}
{{- define "toolexec.kafkaCredentials" -}}
- name: kafka-credentials
  projected:
    defaultMode: 0400
    sources:
      - secret:
          name: {{ (index .ctx.Values.kafka.roles .role).passwordSecret }}
          items:
            - key: password
              path: password
      - secret:
          name: {{ .ctx.Values.kafka.caSecret }}
          items:
            - key: ca.crt
              path: ca.crt
{{- end }}

{{/*
toolexec.probes: the startup, readiness and liveness probes on a port.
Call with (dict "port" "metrics" "readyFailures" 3).
*/}}
{{- define "toolexec.probes" -}}
startupProbe:
  httpGet:
    path: /healthz
    port: {{ .port }}
  periodSeconds: 5
  failureThreshold: 30
readinessProbe:
  httpGet:
    path: /readyz
    port: {{ .port }}
  periodSeconds: 5
  {{- with .readyFailures }}
  failureThreshold: {{ . }}
  {{- end }}
livenessProbe:
  httpGet:
    path: /healthz
    port: {{ .port }}
  periodSeconds: 10
  failureThreshold: 6
{{- end }}

