{{/* The chart's name. */}}
{{- define "flink-controller.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the prefix of every object's name. A release called after the
chart (flink-controller) gives the names of deploy/. */}}
{{- define "flink-controller.fullname" -}}
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

{{/* Labels of every object. */}}
{{- define "flink-controller.labels" -}}
{{ include "flink-controller.selectorLabels" . }}
app.kubernetes.io/part-of: flink-controller
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels that select the controller's pods. */}}
{{- define "flink-controller.selectorLabels" -}}
app.kubernetes.io/name: {{ include "flink-controller.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The controller's ServiceAccount. */}}
{{- define "flink-controller.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "flink-controller.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is needed when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The webhook's Service, Secret (its certificate pair) and configurations. */}}
{{- define "flink-controller.webhookService" -}}
{{- printf "%s-webhook" (include "flink-controller.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "flink-controller.webhookSecret" -}}
{{- printf "%s-webhook" (include "flink-controller.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "flink-controller.webhookConfiguration" -}}
{{- include "flink-controller.fullname" . }}
{{- end }}

{{/* webhook.certificates, checked. */}}
{{- define "flink-controller.webhookCertificates" -}}
{{- $c := .Values.webhook.certificates }}
{{- if not (has $c (list "self" "cert-manager")) }}
{{- fail (printf "webhook.certificates: expected self or cert-manager, got %v" $c) }}
{{- end }}
{{- $c }}
{{- end }}

{{/* The controller's rules on FlinkClusters and their children, the same as the ClusterRole of
deploy/rbac.yaml (see there why each is needed; tests/helm_spec.lua compares them): granted by
a ClusterRole, or by a Role in each of watchNamespaces. */}}
{{- define "flink-controller.rules" -}}
- apiGroups: ["flinkoperator.k8s.io"]
  resources: ["flinkclusters"]
  verbs: ["get", "list", "watch", "patch", "update"]
- apiGroups: ["flinkoperator.k8s.io"]
  resources: ["flinkclusters/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: ["flinkoperator.k8s.io"]
  resources: ["flinkjobs"]
  verbs: ["get", "list", "watch", "patch", "update"]
- apiGroups: ["flinkoperator.k8s.io"]
  resources: ["flinkjobs/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: [""]
  resources: ["configmaps", "services", "serviceaccounts"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# Flink's HA ConfigMaps of a deleted cluster, by label (lua/fc/haclean.lua)
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["deletecollection"]
- apiGroups: ["apps"]
  resources: ["statefulsets", "controllerrevisions"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["networking.k8s.io"]
  resources: ["ingresses"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["roles", "rolebindings"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: [""]
  resources: ["services/proxy"]
  verbs: ["get", "create", "patch", "delete"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end }}
