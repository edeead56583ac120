-- SPDX-License-Identifier: Apache-2.0
--- lib.upgrade: how a spec update carries a running job's state over (spec.job.upgradeMode, as
-- in the Apache Flink Kubernetes Operator), and the Flink Kubernetes HA options last-state
-- needs. Pure functions; used by policies/savepoint.lua (savepoint or not), job.lua (stop,
-- cancel or keep the job), lib/flinkconf.lua (the HA options, flinkconf.ha_properties) and validate.lua.
--
--   savepoint   stop-with-savepoint, then the new spec's job is submitted from that savepoint
--               (needs savepointsDir)
--   stateless   the job is cancelled; the new spec's job starts without state
--   last-state  Flink's Kubernetes HA services keep the job graph and the latest checkpoint
--               pointer in ConfigMaps (labelled type=flink-native-kubernetes,
--               app=<cluster name>) with the data under highAvailability.storageDir: the
--               components are replaced with no savepoint and the JobManager recovers the same
--               job (same id) from its latest checkpoint. A session cluster's JobManager
--               recovers the job graph it was given, so a change of the job itself
--               (upgrade.JOB_FIELDS) cannot go this way: such an update falls back to
--               savepoint when savepointsDir is set, else stateless (upgrade.effective).
local clock = require("lib.clock")

local upgrade = {}

upgrade.STATELESS, upgrade.SAVEPOINT, upgrade.LAST_STATE = "stateless", "savepoint", "last-state"

--- The fields of spec.job that make the job graph a JobManager recovers under HA: a change of
-- any of them needs a new submission (upgrade.effective).
upgrade.JOB_FIELDS = { "jarFile", "className", "args", "parallelism", "allowNonRestoredState", "fromSavepoint" }

--- The Flink option that holds the HA storage directory.
upgrade.STORAGE_KEY = "high-availability.storageDir"

--- upgrade.mode(job_spec) -> "stateless"|"savepoint"|"last-state": spec.job.upgradeMode, else
-- savepoint when savepointsDir is set, else stateless.
function upgrade.mode(spec)
  spec = spec or {}
  if spec.upgradeMode == upgrade.STATELESS or spec.upgradeMode == upgrade.SAVEPOINT
      or spec.upgradeMode == upgrade.LAST_STATE then
    return spec.upgradeMode
  end
  if type(spec.savepointsDir) == "string" and spec.savepointsDir ~= "" then return upgrade.SAVEPOINT end
  return upgrade.STATELESS
end

-- Lua values equal as JSON (tables compared field by field).
local function same(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

--- upgrade.job_changed(old_job, new_job) -> the first of JOB_FIELDS that differs (a string), or nil.
-- old_job nil (the current revision's spec unknown) counts as changed ("spec.job").
function upgrade.job_changed(old_job, new_job)
  if type(old_job) ~= "table" then return "spec.job" end
  for _, f in ipairs(upgrade.JOB_FIELDS) do
    if not same(old_job[f], (new_job or {})[f]) then return f end
  end
  return nil
end

--- upgrade.effective(job_spec, old_job) -> mode, why: how this update goes. last-state with a
-- change of the job itself (job_changed) goes as savepoint when savepointsDir is set, else as
-- stateless; `why` then names the changed field. Other modes as upgrade.mode.
function upgrade.effective(spec, old_job)
  local mode = upgrade.mode(spec)
  if mode ~= upgrade.LAST_STATE then return mode, nil end
  local changed = upgrade.job_changed(old_job, spec)
  if not changed then return mode, nil end
  local fallback = (type(spec.savepointsDir) == "string" and spec.savepointsDir ~= "") and upgrade.SAVEPOINT
    or upgrade.STATELESS
  return fallback, "spec.job." .. changed .. " changed: the HA job graph is the old one"
end

--- upgrade.ha_enabled(spec) -> bool: the cluster runs Flink's Kubernetes HA services
-- (spec.job.upgradeMode last-state).
function upgrade.ha_enabled(spec)
  return type(spec.job) == "table" and upgrade.mode(spec.job) == upgrade.LAST_STATE
end

--- upgrade.latest_checkpoint(kept, job_id, seen) -> status.components.job.latestCheckpoint:
-- {jobID=, id=<Flink's checkpoint id>, path=<its external path, the directory a last-state
-- recovery or a manual `fromSavepoint` starts from>, timestamp=<when it completed, RFC 3339>},
-- the latest completed checkpoint Flink reported (GET /jobs/<id>/checkpoints, latest.completed:
-- `seen` = fc.flink.view's health[<job id>].checkpoints.latest {id, path, timestamp=<ms>}), else
-- `kept` (the one recorded before: a pass without a new answer keeps it; an older id of the
-- same job, an answer before a restore, does not replace it). nil when there is neither.
function upgrade.latest_checkpoint(kept, job_id, seen)
  kept = type(kept) == "table" and kept or nil
  if type(job_id) ~= "string" or type(seen) ~= "table" or math.type(seen.id) ~= "integer" then return kept end
  if kept and kept.jobID == job_id and (tonumber(kept.id) or 0) > seen.id then return kept end
  local ms = math.tointeger(seen.timestamp) or 0
  return { jobID = job_id, id = seen.id, path = type(seen.path) == "string" and seen.path or nil,
    timestamp = ms > 0 and clock.format(ms // 1000) or nil }
end

return upgrade
