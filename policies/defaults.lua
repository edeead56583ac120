-- SPDX-License-Identifier: Apache-2.0
--- policies/defaults.lua: the defaults of a FlinkCluster (flinkoperator.k8s.io/v1beta1).
--
-- Hook: apply(cluster) -> cluster, the FlinkCluster with every default of the API filled in
-- (shared/reference/flinkcluster-api.md, "Spec"). Only fields that are unset (absent or null)
-- are filled. A field of the wrong type is left as it is for validate.lua to report, and a
-- missing optional section never raises.
--
-- Where the defaults live: every static default is a `default:` of deploy/crd.yaml (read here
-- as fc.crd, generated from it by `make`), the one place to change it. The API server stores
-- those on every object it admits; this policy fills them in too, for `render` (no API server)
-- and for objects stored before the CRD had them, exactly as the API server's structural
-- defaulting does (a section's default `{}` first, then the fields inside it). Only the
-- defaults a schema cannot state are written here: the image pull policy, which depends on the
-- image tag (the mutating webhook stores it, docs/admission.md, "The admission webhook").
local util = require("fc.util")
local values = require("lib.values")
local image_ref = require("lib.image")

local defaults = {}
--- The hook contract this policy is written for (fc.contract; another version is refused).
defaults.contract = "hooks.flinkoperator.k8s.io/v1"

local is_null, is_object = values.is_null, values.is_object

--- The schema of `spec` in deploy/crd.yaml, whose `default:` values apply() fills in. Today:
--   jobManager{replicas 1, accessScope Cluster, ports{rpc 6123, blob 6124, query 6125,
--     ui 8081}, memoryOffHeapRatio 25, memoryOffHeapMin "600M"},
--   taskManager{ports{data 6121, rpc 6122, query 6125}, memoryOffHeapRatio 25,
--     memoryOffHeapMin "600M"} (replicas is required, never defaulted),
--   job, only when present (a job cluster){parallelism 1, allowNonRestoredState false,
--     takeSavepointOnUpgrade true, restartPolicy Never, noLoggingToStdout false,
--     cleanupPolicy{afterJobSucceeds DeleteCluster, afterJobFails KeepCluster,
--     afterJobCancelled DeleteCluster}},
--   hadoopConfig, only when present{mountPath /etc/hadoop/conf (the original operator's)},
--   revisionHistoryLimit 10, recreateOnUpdate true.
defaults.SPEC_SCHEMA = require("fc.crd").schema.properties.spec
--- Native TaskManagers (spec.taskManager.mode Native) only, so not a CRD `default:` (the CRD
-- cannot default by another field's value): failed pods (terminated, or not registered in time)
-- before no more are started (ours; Flink's old resource manager had such a limit, without a
-- fixed default here), and seconds from a pod's creation to its registration with the
-- JobManager, Flink's own `taskmanager.registration.timeout` default (5 min).
defaults.NATIVE_MAX_FAILED_ATTEMPTS = 10
defaults.NATIVE_REGISTRATION_TIMEOUT_SECONDS = 300

-- t[k] = v when t[k] is unset (absent or null).
local function fill(t, k, v)
  if is_null(t[k]) then t[k] = util.deepcopy(v) end
end

-- t[k] as an object to fill: a new {} when unset, the table when it is an object,
-- nil when it holds a value of another type (left for validate to report).
local function section(t, k)
  if is_null(t[k]) then t[k] = {} end
  if is_object(t[k]) then return t[k] end
  return nil
end

-- Fills the `default:` of each property of schema node `s` that is unset in the object `v`,
-- then descends into the objects `v` holds (a section just defaulted to {} included): the
-- API server's structural defaulting (apiextensions "Defaulting").
local function schema_defaults(s, v)
  for _, name in ipairs(util.sorted_keys(s.properties or {})) do
    local child = s.properties[name]
    if child.default ~= nil then fill(v, name, child.default) end
    if child.properties and is_object(v[name]) then schema_defaults(child, v[name]) end
  end
end

--- defaults.pull_policy(image) -> "Always" | "IfNotPresent"
-- The rule Kubernetes applies to a container's imagePullPolicy (kubernetes
-- pkg/apis/core/v1/defaults.go, SetDefaults_Container, with the tag from
-- parsers.ParseImageName): "Always" when the tag is `latest` or the reference has neither
-- tag nor digest (it then means latest), else "IfNotPresent". Tag and digest as lib.image
-- reads them ("registry:5000/flink" has no tag). `image` is the image reference string.
function defaults.pull_policy(image)
  local ref = image_ref.parse(image)
  if ref.tag == "latest" or (ref.tag == nil and ref.digest == nil) then return "Always" end
  return "IfNotPresent"
end

--- defaults.apply(cluster) -> cluster
-- `cluster` is a FlinkCluster as a Lua table (the API's JSON shape); returns a copy with the
-- CRD's defaults (defaults.SPEC_SCHEMA) and spec.image.pullPolicy (the Kubernetes rule above;
-- only when image.name is a string) filled in. An absent spec.image or spec.taskManager
-- becomes {} (so that validate names the required field inside it); a null spec.job is
-- removed (a session cluster). metadata (name, namespace) is not defaulted: kubectl and the
-- API server fill the namespace from the request. A non-object `cluster` or `spec` comes back
-- unchanged. With spec.taskManager.mode Native also maxFailedAttempts 10 and
-- registrationTimeoutSeconds 300 (mode itself is not filled: an absent mode is StatefulSet, and an
-- existing manifest keeps its defaulted spec, hence its revision, unchanged).
function defaults.apply(cluster)
  local out = util.deepcopy(cluster)
  if not is_object(out) then return out end
  local spec = section(out, "spec")
  if not spec then return out end
  section(spec, "image")
  section(spec, "taskManager")
  -- job: absent (or null) means a session cluster; only an object is defaulted
  if is_null(spec.job) then spec.job = nil end

  schema_defaults(defaults.SPEC_SCHEMA, spec)

  local image = spec.image
  if is_object(image) and type(image.name) == "string" and image.name ~= "" then
    fill(image, "pullPolicy", defaults.pull_policy(image.name))
  end

  local tm = spec.taskManager
  if is_object(tm) and tm.mode == "Native" then
    fill(tm, "maxFailedAttempts", defaults.NATIVE_MAX_FAILED_ATTEMPTS)
    fill(tm, "registrationTimeoutSeconds", defaults.NATIVE_REGISTRATION_TIMEOUT_SECONDS)
  end
  return out
end

return defaults
