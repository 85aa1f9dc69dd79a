{{/*
Names. The chart name, overridable; the fully qualified app name (truncated at 63 characters because some
Kubernetes name fields are limited to that, per the DNS label standard).
*/}}
{{- define "upgrade-gate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "upgrade-gate.fullname" -}}
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

{{- define "upgrade-gate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Component names: <fullname>-webhook and <fullname>-sync, kept within 63 characters. */}}
{{- define "upgrade-gate.webhook.fullname" -}}
{{- printf "%s-webhook" (include "upgrade-gate.fullname" . | trunc 55 | trimSuffix "-") }}
{{- end }}

{{- define "upgrade-gate.sync.fullname" -}}
{{- printf "%s-sync" (include "upgrade-gate.fullname" . | trunc 58 | trimSuffix "-") }}
{{- end }}

{{- define "upgrade-gate.controller.fullname" -}}
{{- printf "%s-controller" (include "upgrade-gate.fullname" . | trunc 52 | trimSuffix "-") }}
{{- end }}

{{/* The Secret holding the serving certificate (tls.crt, tls.key, ca.crt), in both TLS modes. */}}
{{- define "upgrade-gate.webhook.tlsSecretName" -}}
{{- printf "%s-tls" (include "upgrade-gate.webhook.fullname" .) }}
{{- end }}

{{/* The DNS name the API server dials: <service>.<namespace>.svc */}}
{{- define "upgrade-gate.webhook.serviceHost" -}}
{{- printf "%s.%s.svc" (include "upgrade-gate.webhook.fullname" .) .Release.Namespace }}
{{- end }}

{{/* Standard labels (https://helm.sh/docs/chart_best_practices/labels/). */}}
{{- define "upgrade-gate.labels" -}}
helm.sh/chart: {{ include "upgrade-gate.chart" . }}
app.kubernetes.io/name: {{ include "upgrade-gate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: upgrade-gate
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels: stable across upgrades, so never the version. Call with (dict "ctx" $ "component" "webhook"). */}}
{{- define "upgrade-gate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "upgrade-gate.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Labels of one component's objects. Call with (dict "ctx" $ "component" "webhook"). */}}
{{- define "upgrade-gate.componentLabels" -}}
{{ include "upgrade-gate.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The image reference: a digest wins over a tag; the tag defaults to the chart's appVersion. */}}
{{- define "upgrade-gate.image" -}}
{{- $repo := .Values.image.repository }}
{{- if .Values.image.registry }}
{{- $repo = printf "%s/%s" .Values.image.registry .Values.image.repository }}
{{- end }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $repo .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repo (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "upgrade-gate.webhook.serviceAccountName" -}}
{{- if .Values.webhook.serviceAccount.create }}
{{- default (include "upgrade-gate.webhook.fullname" .) .Values.webhook.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.webhook.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "upgrade-gate.sync.serviceAccountName" -}}
{{- if .Values.sync.serviceAccount.create }}
{{- default (include "upgrade-gate.sync.fullname" .) .Values.sync.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.sync.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "upgrade-gate.controller.serviceAccountName" -}}
{{- if .Values.controller.serviceAccount.create }}
{{- default (include "upgrade-gate.controller.fullname" .) .Values.controller.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.controller.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The policies directory the webhook reads: the image's bundled set, or the ConfigMap mount. */}}
{{- define "upgrade-gate.policies.configMapName" -}}
{{- if .Values.policies.existingConfigMap }}
{{- .Values.policies.existingConfigMap }}
{{- else if .Values.policies.files }}
{{- printf "%s-policies" (include "upgrade-gate.fullname" .) }}
{{- end }}
{{- end }}

{{- define "upgrade-gate.policies.dir" -}}
{{- if include "upgrade-gate.policies.configMapName" . }}/etc/upgrade-gate/policies{{ else }}{{ .Values.policies.bundledDir }}{{ end }}
{{- end }}

{{/*
The admission rules: the governed kinds, and nothing else. The validating webhook governs all four kinds;
the mutating webhook the three it stamps (ClusterManagementAddOns are validated only).
Call with (dict "mutating" true|false).
*/}}
{{- define "upgrade-gate.webhook.rules" -}}
- apiGroups: ["olm.operatorframework.io"]
  apiVersions: ["v1"]
  operations: ["CREATE", "UPDATE"]
  resources: ["clusterextensionrevisions", "clusterextensions"]
  scope: Cluster
- apiGroups: ["addon.open-cluster-management.io"]
  apiVersions: ["v1alpha1"]
  operations: ["CREATE", "UPDATE"]
  resources: ["managedclusteraddons"]
  scope: Namespaced
{{- if not .mutating }}
- apiGroups: ["addon.open-cluster-management.io"]
  apiVersions: ["v1alpha1"]
  operations: ["CREATE", "UPDATE"]
  resources: ["clustermanagementaddons"]
  scope: Cluster
{{- end }}
{{- end }}

{{/* The webhook Service as a webhook clientConfig; takes dict "ctx" "path" "caBundle" (empty: none). */}}
{{- define "upgrade-gate.webhook.clientConfig" -}}
service:
  name: {{ include "upgrade-gate.webhook.fullname" .ctx }}
  namespace: {{ .ctx.Release.Namespace }}
  path: {{ .path }}
  port: {{ .ctx.Values.webhook.service.port }}
{{- if .caBundle }}
caBundle: {{ .caBundle }}
{{- end }}
{{- end }}

{{/* A list of strings as the elements of a CEL list literal: 'a', 'b'. */}}
{{- define "upgrade-gate.celStrings" -}}
{{- $quoted := list }}
{{- range . }}{{- $quoted = append $quoted (printf "'%s'" (replace "'" "\\'" .)) }}{{- end }}
{{- join ", " $quoted }}
{{- end }}

{{/*
The namespace selector: kube-system, the release namespace and webhook.exemptNamespaces are never sent to
the webhook. (Cluster-scoped objects have no namespace, so a namespaceSelector never exempts them.)
*/}}
{{- define "upgrade-gate.webhook.namespaceSelector" -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values:
      {{- range (concat (list "kube-system" .Release.Namespace) .Values.webhook.exemptNamespaces | uniq) }}
      - {{ . | quote }}
      {{- end }}
{{- end }}

{{/* Pod and container security settings shared by both components. */}}
{{- define "upgrade-gate.podSecurityContext" -}}
{{- toYaml .Values.podSecurityContext }}
{{- end }}

{{- define "upgrade-gate.containerSecurityContext" -}}
{{- toYaml .Values.containerSecurityContext }}
{{- end }}

{{/*
The sync loop's container, shared by the Deployment and the CronJob. Git and forge credentials come only
from existing Secrets: HTTPS user/password and the forge token as environment variables (secretKeyRef),
an SSH key as a file. Call with (dict "ctx" $ "once" true|false).
*/}}
{{- define "upgrade-gate.sync.container" -}}
{{- $v := .ctx.Values -}}
- name: sync
  image: {{ include "upgrade-gate.image" .ctx | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  args:
    - sync
    - --repo={{ $v.sync.repo }}
    {{- if .once }}
    - --once
    {{- else }}
    - --interval={{ $v.sync.interval }}
    {{- end }}
    {{- range $v.sync.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  env:
    - name: HOME
      value: /tmp
    - name: POD_NAMESPACE
      valueFrom:
        fieldRef:
          fieldPath: metadata.namespace
    - name: POD_NAME
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    {{- if not .once }}
    - name: UPGRADE_GATE_LEADER_ELECTION
      value: {{ $v.sync.leaderElection.enabled | quote }}
    - name: UPGRADE_GATE_LEASE_NAME
      value: {{ include "upgrade-gate.sync.fullname" .ctx }}
    {{- end }}
    {{- with $v.sync.git.existingSecret }}
    {{- if $v.sync.git.usernameKey }}
    - name: UPGRADE_GATE_GIT_USERNAME
      valueFrom:
        secretKeyRef:
          name: {{ . }}
          key: {{ $v.sync.git.usernameKey }}
    {{- end }}
    {{- if $v.sync.git.passwordKey }}
    - name: UPGRADE_GATE_GIT_PASSWORD
      valueFrom:
        secretKeyRef:
          name: {{ . }}
          key: {{ $v.sync.git.passwordKey }}
    {{- end }}
    {{- if $v.sync.git.sshKeyKey }}
    - name: GIT_SSH_COMMAND
      value: >-
        ssh -i /etc/upgrade-gate/git/ssh-privatekey -o IdentitiesOnly=yes
        {{- if $v.sync.git.knownHostsKey }} -o UserKnownHostsFile=/etc/upgrade-gate/git/known_hosts -o StrictHostKeyChecking=yes{{ end }}
    {{- end }}
    {{- end }}
    {{- with $v.sync.forge.existingSecret }}
    - name: UPGRADE_GATE_FORGE_TOKEN
      valueFrom:
        secretKeyRef:
          name: {{ . }}
          key: {{ $v.sync.forge.tokenKey }}
    {{- end }}
    {{- with $v.sync.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  resources:
    {{- toYaml $v.sync.resources | nindent 4 }}
  securityContext:
    {{- include "upgrade-gate.containerSecurityContext" .ctx | nindent 4 }}
  volumeMounts:
    - name: tmp
      mountPath: /tmp
    {{- if and $v.sync.git.existingSecret $v.sync.git.sshKeyKey }}
    - name: git-ssh
      mountPath: /etc/upgrade-gate/git
      readOnly: true
    {{- end }}
{{- end }}

{{/* The sync loop's volumes, matching the container's mounts. */}}
{{- define "upgrade-gate.sync.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: 1Gi
{{- if and .Values.sync.git.existingSecret .Values.sync.git.sshKeyKey }}
- name: git-ssh
  secret:
    secretName: {{ .Values.sync.git.existingSecret }}
    defaultMode: 0400
    items:
      - key: {{ .Values.sync.git.sshKeyKey }}
        path: ssh-privatekey
      {{- if .Values.sync.git.knownHostsKey }}
      - key: {{ .Values.sync.git.knownHostsKey }}
        path: known_hosts
      {{- end }}
{{- end }}
{{- end }}

{{/* Pod-level settings of the sync loop, shared by the Deployment and the CronJob. */}}
{{- define "upgrade-gate.sync.podSpec" -}}
serviceAccountName: {{ include "upgrade-gate.sync.serviceAccountName" . }}
automountServiceAccountToken: true
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- include "upgrade-gate.podSecurityContext" . | nindent 2 }}
{{- with .Values.sync.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.sync.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.sync.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
