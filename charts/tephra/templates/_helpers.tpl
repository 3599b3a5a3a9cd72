{{/*
Helpers of the Tephra chart. Components are named by Volcano's value prefixes: "controller", "scheduler",
"admission" (custom.<component>_affinity, basic.<component>_image_name, ...).
*/}}

{{/* Labels of every object of the chart (CRDs excepted), custom.common_labels merged in. */}}
{{- define "tephra.labels" -}}
{{- $l := dict "helm.sh/chart" (printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_") "app.kubernetes.io/name" "tephra" "app.kubernetes.io/instance" .Release.Name "app.kubernetes.io/version" .Chart.AppVersion "app.kubernetes.io/managed-by" .Release.Service "app.kubernetes.io/part-of" "tephra" -}}
{{- toYaml (mustMergeOverwrite $l (deepCopy (.Values.custom.common_labels | default dict))) -}}
{{- end -}}

{{/*
Volcano's selector label of a component's pods (app: volcano-controller, volcano-scheduler, volcano-admission).
Deployment selectors cannot change, so Volcano's are kept: a release upgraded in place from Volcano's chart
keeps its Deployments.
*/}}
{{- define "tephra.selectorLabels" -}}
app: {{ printf "volcano-%s" . }}
{{- end -}}

{{/* Labels of a component's objects: ctx, component. */}}
{{- define "tephra.componentLabels" -}}
{{- $ctx := index . 0 -}}{{- $c := index . 1 -}}
{{- $l := fromYaml (include "tephra.labels" $ctx) -}}
{{- $_ := set $l "app.kubernetes.io/component" $c -}}
{{- toYaml (mustMergeOverwrite $l (fromYaml (include "tephra.selectorLabels" $c))) -}}
{{- end -}}

{{/* Labels of a component's Deployment: component labels + custom.<c>_labels. */}}
{{- define "tephra.deploymentLabels" -}}
{{- $ctx := index . 0 -}}{{- $c := index . 1 -}}
{{- $l := fromYaml (include "tephra.componentLabels" .) -}}
{{- toYaml (mustMergeOverwrite $l (deepCopy (index $ctx.Values.custom (printf "%s_labels" $c) | default dict))) -}}
{{- end -}}

{{/*
Labels of a component's pods: name, instance, component and custom.common_labels, then custom.<c>_podLabels;
the selector label always wins. No chart or app version: a chart upgrade that changes nothing of the pods
does not restart them.
*/}}
{{- define "tephra.podLabels" -}}
{{- $ctx := index . 0 -}}{{- $c := index . 1 -}}
{{- $l := dict "app.kubernetes.io/name" "tephra" "app.kubernetes.io/instance" $ctx.Release.Name "app.kubernetes.io/component" $c "app.kubernetes.io/managed-by" $ctx.Release.Service -}}
{{- $l = mustMergeOverwrite $l (deepCopy ($ctx.Values.custom.common_labels | default dict)) -}}
{{- $l = mustMergeOverwrite $l (deepCopy (index $ctx.Values.custom (printf "%s_podLabels" $c) | default dict)) -}}
{{- toYaml (mustMergeOverwrite $l (fromYaml (include "tephra.selectorLabels" $c))) -}}
{{- end -}}

{{/* The image of a component: <registry>/<name>:<tag>; the tag defaults to image_tag_version, then appVersion. */}}
{{- define "tephra.image" -}}
{{- $ctx := index . 0 -}}{{- $c := index . 1 -}}
{{- $b := $ctx.Values.basic -}}
{{- $name := index $b (printf "%s_image_name" $c) | default "tephra/tephra" -}}
{{- $tag := index $b (printf "%s_image_tag_version" $c) | default $b.image_tag_version | default $ctx.Chart.AppVersion -}}
{{- if $b.image_registry -}}
{{- printf "%s/%s:%s" (trimSuffix "/" $b.image_registry) $name $tag -}}
{{- else -}}
{{- printf "%s:%s" $name $tag -}}
{{- end -}}
{{- end -}}

{{/* --log-level from a name or a klog number (0-3 info, 4 debug, 5+ trace). */}}
{{- define "tephra.logLevel" -}}
{{- if kindIs "string" . -}}
{{- . -}}
{{- else -}}
{{- $n := int . -}}
{{- if le $n 3 }}info{{ else if eq $n 4 }}debug{{ else }}trace{{ end -}}
{{- end -}}
{{- end -}}

{{/* custom.scheduler_name as a JSON list (empty when unset: the binaries' default, volcano). */}}
{{- define "tephra.schedulerNames" -}}
{{- $names := list -}}
{{- range splitList "," (toString (.Values.custom.scheduler_name | default "")) -}}
{{- $n := trim . -}}
{{- if and $n (not (has $n $names)) }}{{ $names = append $names $n }}{{ end -}}
{{- end -}}
{{- toJson $names -}}
{{- end -}}

{{/* --scheduler-name flags (one per name). */}}
{{- define "tephra.schedulerNameArgs" -}}
{{- range fromJsonArray (include "tephra.schedulerNames" .) }}
- --scheduler-name={{ . }}
{{- end -}}
{{- end -}}

{{/* custom.enabled_admissions as a JSON list of paths, in the order given, without repeats. */}}
{{- define "tephra.enabledAdmissions" -}}
{{- $paths := list -}}
{{- range splitList "," (toString .Values.custom.enabled_admissions) -}}
{{- $p := trim . -}}
{{- if and $p (not (has $p $paths)) }}{{ $paths = append $paths $p }}{{ end -}}
{{- end -}}
{{- toJson $paths -}}
{{- end -}}

{{/*
Volcano's admission endpoints as `tephra webhook` registers them (webhooks/src/admission.cc, in that order):
path, webhook name, mutating, and the rule. /pods/mutate is served but never registered (docs/webhook.md).
*/}}
{{- define "tephra.admissionEndpoints" -}}
- {path: /jobs/mutate, name: mutatejob.volcano.sh, mutating: true, group: batch.volcano.sh, version: v1alpha1, resource: jobs, operations: [CREATE]}
- {path: /jobs/validate, name: validatejob.volcano.sh, mutating: false, group: batch.volcano.sh, version: v1alpha1, resource: jobs, operations: [CREATE, UPDATE]}
- {path: /queues/mutate, name: mutatequeue.volcano.sh, mutating: true, group: scheduling.volcano.sh, version: v1beta1, resource: queues, operations: [CREATE]}
- {path: /queues/validate, name: validatequeue.volcano.sh, mutating: false, group: scheduling.volcano.sh, version: v1beta1, resource: queues, operations: [CREATE, UPDATE, DELETE]}
- {path: /podgroups/mutate, name: mutatepodgroup.volcano.sh, mutating: true, group: scheduling.volcano.sh, version: v1beta1, resource: podgroups, operations: [CREATE]}
- {path: /podgroups/validate, name: validatepodgroup.volcano.sh, mutating: false, group: scheduling.volcano.sh, version: v1beta1, resource: podgroups, operations: [CREATE]}
- {path: /pods/mutate, name: mutatepod.volcano.sh, mutating: true, group: "", version: v1, resource: pods, operations: [CREATE], unregistered: true}
- {path: /pods/validate, name: validatepod.volcano.sh, mutating: false, group: "", version: v1, resource: pods, operations: [CREATE]}
- {path: /jobflows/validate, name: validatejobflow.volcano.sh, mutating: false, group: flow.volcano.sh, version: v1alpha1, resource: jobflows, operations: [CREATE, UPDATE]}
- {path: /hypernodes/validate, name: validatehypernode.volcano.sh, mutating: false, group: topology.volcano.sh, version: v1alpha1, resource: hypernodes, operations: [CREATE, UPDATE]}
- {path: /cronjobs/validate, name: validatecronjob.volcano.sh, mutating: false, group: batch.volcano.sh, version: v1alpha1, resource: cronjobs, operations: [CREATE, UPDATE]}
{{- end -}}

{{/* The endpoints that get a webhook configuration: enabled and registered, as a JSON list. */}}
{{- define "tephra.registeredEndpoints" -}}
{{- $enabled := fromJsonArray (include "tephra.enabledAdmissions" .) -}}
{{- $out := list -}}
{{- range fromYamlArray (include "tephra.admissionEndpoints" .) -}}
{{- if and (has .path $enabled) (not .unregistered) }}{{ $out = append $out . }}{{ end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{- define "tephra.admissionServiceName" -}}
{{- printf "%s-admission-service" .Release.Name -}}
{{- end -}}

{{/* Name of a webhook configuration, the role's: <service>-<path without the leading '/', '/' -> '-'>. */}}
{{- define "tephra.webhookConfigurationName" -}}
{{- $ctx := index . 0 -}}{{- $path := index . 1 -}}
{{- printf "%s-%s" (include "tephra.admissionServiceName" $ctx) (trimPrefix "/" $path | replace "/" "-") -}}
{{- end -}}

{{/* The serving Certificate's name in cert-manager mode (also the inject-ca-from source). */}}
{{- define "tephra.servingCertificateName" -}}
{{- printf "%s-admission-serving" .Release.Name -}}
{{- end -}}

{{/* Pod securityContext of a component: the chart's, with custom.<c>_sc (else default_sc) merged over it. */}}
{{- define "tephra.podSecurityContext" -}}
{{- $ctx := index . 0 -}}{{- $c := index . 1 -}}
{{- $base := dict "runAsNonRoot" true "runAsUser" 65532 "runAsGroup" 65532 "seccompProfile" (dict "type" "RuntimeDefault") -}}
{{- $user := index $ctx.Values.custom (printf "%s_sc" $c) | default $ctx.Values.custom.default_sc | default dict -}}
{{- toYaml (mustMergeOverwrite $base (deepCopy $user)) -}}
{{- end -}}

{{/* Container securityContext of a component: the chart's, with custom.<c>_main_csc (else default_csc) merged over it. */}}
{{- define "tephra.containerSecurityContext" -}}
{{- $ctx := index . 0 -}}{{- $c := index . 1 -}}
{{- $base := dict "readOnlyRootFilesystem" true "allowPrivilegeEscalation" false "capabilities" (dict "drop" (list "ALL")) -}}
{{- $user := index $ctx.Values.custom (printf "%s_main_csc" $c) | default $ctx.Values.custom.default_csc | default dict -}}
{{- toYaml (mustMergeOverwrite $base (deepCopy $user)) -}}
{{- end -}}

{{/* Scheduling-related pod spec fields of a component (Volcano's per-component keys with default_* fallbacks). */}}
{{- define "tephra.podPlacement" -}}
{{- $ctx := index . 0 -}}{{- $c := index . 1 -}}
{{- $v := $ctx.Values.custom -}}
{{- with index $v (printf "%s_tolerations" $c) | default $v.default_tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with index $v (printf "%s_ns" $c) | default $v.default_ns }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with index $v (printf "%s_affinity" $c) | default $v.default_affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- else }}
{{- if and (eq $c "admission") (include "tephra.admissionHA" $ctx) }}
# Replicas of a fail-closed webhook on different nodes where possible: one node going down must not take
# every replica (and so every vcjob and Queue write of the cluster) with it. Preferred, not required, so a
# one-node cluster still runs them all.
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- include "tephra.selectorLabels" "admission" | nindent 14 }}
{{- end }}
{{- end }}
{{- with $v.priority_class_name }}
priorityClassName: {{ . }}
{{- end }}
{{- with $ctx.Values.basic.image_pull_secret }}
imagePullSecrets:
  - name: {{ . }}
{{- end }}
securityContext:
  {{- include "tephra.podSecurityContext" . | nindent 2 }}
{{- end -}}

{{/* Liveness (/healthz) and readiness (/readyz) probes on the container port named "health". */}}
{{- define "tephra.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: health
  initialDelaySeconds: 15
  periodSeconds: 20
  timeoutSeconds: 5
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: /readyz
    port: health
  initialDelaySeconds: 5
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
{{- end -}}

{{/* Service spec fields shared by the chart's Services (Volcano's service.* keys). */}}
{{- define "tephra.serviceIpFamilies" -}}
{{- with .Values.service.ipFamilyPolicy }}
ipFamilyPolicy: {{ . }}
{{- end }}
{{- with .Values.service.ipFamilies }}
ipFamilies:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Leader-election flags (controller and scheduler). */}}
{{- define "tephra.leaderElectArgs" -}}
{{- if .Values.custom.leader_elect_enable }}
- --leader-elect=true
- --lock-object-namespace={{ .Release.Namespace }}
{{- else }}
- --leader-elect=false
{{- end }}
{{- end -}}

{{/* apiVersion of PodDisruptionBudget for the target cluster (policy/v1 from 1.21). */}}
{{- define "tephra.pdbApiVersion" -}}
{{- if semverCompare ">=1.21-0" .Capabilities.KubeVersion.Version -}}policy/v1{{- else -}}policy/v1beta1{{- end -}}
{{- end -}}

{{/* True when the API server evaluates webhook matchConditions (1.28+), as `tephra webhook` decides it. */}}
{{- define "tephra.matchConditions" -}}
{{- if semverCompare ">=1.28-0" .Capabilities.KubeVersion.Version -}}true{{- end -}}
{{- end -}}

{{/*
With custom.metrics_auth=kubernetes a role checks its metrics clients' tokens (TokenReview) and rights
(SubjectAccessReview): it may create both (docs/metrics.md, "Securing /metrics").
*/}}
{{- define "tephra.metricsAuthRules" -}}
{{- if eq .Values.custom.metrics_auth "kubernetes" }}
# --metrics-auth=kubernetes: TokenReview and SubjectAccessReview for the callers of /metrics.
- apiGroups: ["authentication.k8s.io"]
  resources: ["tokenreviews"]
  verbs: ["create"]
- apiGroups: ["authorization.k8s.io"]
  resources: ["subjectaccessreviews"]
  verbs: ["create"]
{{- end }}
{{- end }}

{{/* The webhook's replicas: custom.admission_replicas when set; otherwise 2 when its validating webhooks fail
closed (failurePolicy Fail: with one replica, a restart, a drain or a lost node denies every vcjob and Queue
write of the cluster), 1 when they fail open. */}}
{{- define "tephra.admissionReplicas" -}}
{{- $v := .Values.custom -}}
{{- if kindIs "invalid" $v.admission_replicas -}}
{{- ternary 2 1 (eq $v.admission_failure_policy "Fail") -}}
{{- else -}}
{{- $v.admission_replicas -}}
{{- end -}}
{{- end -}}

{{/* "true" (else "") when the webhook runs highly available: it fails closed and has 2+ replicas. Then the
chart adds a PodDisruptionBudget (minAvailable 1) and, unless an affinity is given, a preferred pod
anti-affinity across nodes. */}}
{{- define "tephra.admissionHA" -}}
{{- if and (eq .Values.custom.admission_failure_policy "Fail") (ge (include "tephra.admissionReplicas" . | atoi) 2) -}}
true
{{- end -}}
{{- end -}}
