{{/*
Names and labels. Every object is "<release>-<component>" unless the release is already
called mesh-endpoints, so the default install gives mesh-endpoints-external-workloads and
mesh-endpoints-service-mirror (the names of the Leases and Event sources too).
*/}}
{{- define "mesh-endpoints.prefix" -}}
{{- if contains "mesh-endpoints" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-mesh-endpoints" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mesh-endpoints.name" -}}
{{- printf "%s-%s" (include "mesh-endpoints.prefix" .root) .component -}}
{{- end -}}

{{- define "mesh-endpoints.selectorLabels" -}}
app.kubernetes.io/name: mesh-endpoints
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "mesh-endpoints.labels" -}}
{{ include "mesh-endpoints.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Labels of objects that belong to no one controller (dashboard, rules). */}}
{{- define "mesh-endpoints.commonLabels" -}}
app.kubernetes.io/name: mesh-endpoints
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "mesh-endpoints.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* The service mirror's namespace: its Links, their Secrets, its Lease (and its Role). */}}
{{- define "mesh-endpoints.linkNamespace" -}}
{{- .Values.serviceMirror.linkNamespace | default .Release.Namespace -}}
{{- end -}}

{{/* Flags every controller takes (src/cli/common.ts). --identity comes from POD_NAME. */}}
{{- define "mesh-endpoints.commonArgs" -}}
- --admin-addr={{ .root.Values.adminBindAddress }}:{{ .values.adminPort }}
- --lease-duration={{ .root.Values.leaderElection.leaseDuration }}
- --renew-deadline={{ .root.Values.leaderElection.renewDeadline }}
- --retry-period={{ .root.Values.leaderElection.retryPeriod }}
- --resync-period={{ .root.Values.resyncPeriod }}
- --kube-api-qps={{ .root.Values.kubeApiQps }}
- --kube-api-burst={{ .root.Values.kubeApiBurst }}
- --log-level={{ .root.Values.logLevel }}
{{- end -}}

{{/*
A controller's Deployment, PodDisruptionBudget and metrics Service (its ServiceAccount is
with its RBAC, in <component>/rbac.yaml).
Call with (dict "root" $ "component" NAME "values" .Values.<controller> "args" LIST).
*/}}
{{- define "mesh-endpoints.controller" -}}
{{- $name := include "mesh-endpoints.name" . -}}
{{- $v := .values -}}
{{- $root := .root -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "mesh-endpoints.labels" . | nindent 4 }}
spec:
  replicas: {{ $v.replicas }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "mesh-endpoints.selectorLabels" . | nindent 6 }}
  strategy:
    # One replica at a time: the standby keeps the Lease's writer while the other rolls.
    type: RollingUpdate
    rollingUpdate: { maxSurge: 1, maxUnavailable: 0 }
  template:
    metadata:
      labels:
        {{- include "mesh-endpoints.labels" . | nindent 8 }}
        {{- with $root.Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with $root.Values.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ $name }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      # SIGTERM finishes the item in hand and hands the Lease over; well within this.
      terminationGracePeriodSeconds: 30
      affinity:
        {{- if $v.affinity }}
        {{- toYaml $v.affinity | nindent 8 }}
        {{- else }}
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector:
                  matchLabels:
                    {{- include "mesh-endpoints.selectorLabels" . | nindent 20 }}
        {{- end }}
      {{- with $v.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ .component }}
          image: {{ include "mesh-endpoints.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args:
            - {{ .component }}
            {{- include "mesh-endpoints.commonArgs" . | nindent 12 }}
            {{- toYaml .args | nindent 12 }}
            {{- with $v.extraArgs }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          env:
            # The leader election identity (--identity defaults to it).
            - name: POD_NAME
              valueFrom:
                fieldRef: { fieldPath: metadata.name }
            {{- with $v.env }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          ports:
            - name: admin
              containerPort: {{ $v.adminPort }}
              protocol: TCP
            {{- with .ports }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          livenessProbe:
            httpGet: { path: /healthz, port: admin }
            periodSeconds: 10
            timeoutSeconds: 2
            failureThreshold: 3
          readinessProbe:
            # Ready once the caches have synced, on standby replicas too.
            httpGet: { path: /readyz, port: admin }
            periodSeconds: 5
            timeoutSeconds: 2
            failureThreshold: 2
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.containerSecurityContext | nindent 12 }}
{{- if $v.podDisruptionBudget.enabled }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "mesh-endpoints.labels" . | nindent 4 }}
spec:
  maxUnavailable: {{ $v.podDisruptionBudget.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "mesh-endpoints.selectorLabels" . | nindent 6 }}
{{- end }}
{{- if $root.Values.metrics.service.enabled }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $name }}-metrics
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "mesh-endpoints.labels" . | nindent 4 }}
    mesh-endpoints.io/metrics: "true"
spec:
  type: {{ $root.Values.metrics.service.type }}
  selector:
    {{- include "mesh-endpoints.selectorLabels" . | nindent 4 }}
  ports:
    - name: admin
      port: {{ $v.adminPort }}
      targetPort: admin
      protocol: TCP
{{- end }}
{{- end -}}

{{/* A controller's ServiceAccount: the identity its RBAC binds. */}}
{{- define "mesh-endpoints.serviceAccount" -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "mesh-endpoints.name" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "mesh-endpoints.labels" . | nindent 4 }}
{{- end -}}

{{/* A binding of a (Cluster)Role to a controller's ServiceAccount. */}}
{{- define "mesh-endpoints.subjects" -}}
subjects:
  - kind: ServiceAccount
    name: {{ include "mesh-endpoints.name" . }}
    namespace: {{ .root.Release.Namespace }}
{{- end -}}
