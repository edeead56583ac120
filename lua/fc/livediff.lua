-- SPDX-License-Identifier: Apache-2.0
--- fc.livediff: the decisions behind `flink-controller diff` (core/livediff.c; issue "Policy
-- authoring", item 3): what a candidate policy directory would change in live FlinkClusters,
-- shown the way `kubectl diff` shows it. Read-only: the core only lists, gets and dry-runs.
--
-- 1. livediff.plan(snapshot) runs one reconcile pass (fc.reconcile.run, the same snapshot the
--    controller builds, with no Flink answers) and keeps what it would write: the objects it
--    would apply (including those an update would apply once the API server accepts them in
--    its dry run), the children it would delete, the new status.
-- 2. The core dry-runs each object (server-side apply, dryRun=All), so the "merged" side holds
--    the server's defaults exactly as an apply would leave them.
-- 3. livediff.files(...) turns live and merged objects into file pairs, named like kubectl's
--    (`<group>.<version>.<Kind>.<namespace>.<name>`), that the core writes under LIVE/ and
--    MERGED/ and compares with `diff -u -N`.
local reconcile = require("fc.reconcile")
local codec = require("fc.codec")
local util = require("fc.util")

local livediff = {}

--- livediff.plan(snapshot) -> {applies={{kind=, name=, object=}}, deletes={{kind=, name=}},
--   status=<the status the pass would write, or nil>, events={...}}.
-- snapshot: as fc.reconcile.run's (cluster, children, flink, now, dry_runs).
function livediff.plan(snapshot)
  local result = reconcile.run(snapshot)
  local out = { applies = {}, deletes = {}, status = result.status, events = result.events or {} }
  for _, a in ipairs(result.actions or {}) do
    if a.op == "apply" or a.op == "dry_run" then
      out.applies[#out.applies + 1] = { kind = a.object.kind, name = a.object.metadata.name, object = a.object }
    elseif a.op == "delete" then
      out.deletes[#out.deletes + 1] = { kind = a.kind, name = a.name }
    end
  end
  return out
end

-- An object as a diff shows it: server bookkeeping that changes on every write dropped
-- (managedFields, resourceVersion), the rest as the server keeps it.
local function shown(obj)
  if obj == nil then return nil end
  local o = util.deepcopy(obj)
  if type(o.metadata) == "table" then
    o.metadata.managedFields = nil
    o.metadata.resourceVersion = nil
  end
  return codec.encode_yaml(o)
end

-- kubectl's file name of an object: "<apiVersion with / as .>.<Kind>.<namespace>.<name>".
local function file_name(api_version, kind, namespace, name)
  return string.format("%s.%s.%s.%s", (api_version or "v1"):gsub("/", "."), kind, namespace or "", name)
end

--- livediff.files(input) -> {{name=, live=<YAML or nil>, merged=<YAML or nil>}, ...} in a stable
-- order: the FlinkCluster (when its status would change: live with the new status), each
-- applied object (live: the cached child, nil when new; merged: the dry-run answer), each
-- deleted child (merged nil).
-- input: {cluster=<live FlinkCluster>, children={<kind>={<name>=obj}}, applies={{kind=, name=,
--   merged=<the server's dry-run answer>}}, deletes={{kind=, name=}}, status=<new status or nil>}.
function livediff.files(input)
  local cluster = input.cluster
  local ns = cluster.metadata.namespace
  local children = input.children or {}
  local out = {}
  if input.status ~= nil then
    local merged = util.deepcopy(cluster)
    merged.status = input.status
    out[#out + 1] = { name = file_name(cluster.apiVersion, "FlinkCluster", ns, cluster.metadata.name),
      live = shown(cluster), merged = shown(merged) }
  end
  for _, a in ipairs(input.applies or {}) do
    local live = (children[a.kind] or {})[a.name]
    local api = (a.merged or live or {}).apiVersion
    out[#out + 1] = { name = file_name(api, a.kind, ns, a.name), live = shown(live), merged = shown(a.merged) }
  end
  for _, d in ipairs(input.deletes or {}) do
    local live = (children[d.kind] or {})[d.name]
    if live then
      out[#out + 1] = { name = file_name(live.apiVersion, d.kind, ns, d.name), live = shown(live) }
    end
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

return livediff
