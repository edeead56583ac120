-- SPDX-License-Identifier: Apache-2.0
-- Argo CD health check of a FlinkCluster (flinkoperator.k8s.io/v1beta1), written to Argo CD's
-- resource_customizations convention: the body of a function of `obj` (the object as the API
-- server returns it) that returns {status=, message=}, status one of Healthy, Progressing,
-- Degraded, Suspended (Missing is Argo CD's own, for an object that is not there). Argo CD runs
-- it with gopher-lua: Lua 5.1 with only its base, table and (safe) os libraries, unless
-- resource.customizations.useOpenLibs is set: no string or math library here. Install:
-- docs/gitops.md.
-- Test cases: health_test.yaml beside it (testdata/*.yaml), run by tests/argocd_health_spec.lua.
--
-- It reads the conditions policies/status.lua writes for kstatus (sigs.k8s.io/cli-utils
-- pkg/kstatus, README "Conditions", which Flux and `kubectl wait` read too), in kstatus's order,
-- so both tools tell the same story:
-- 1. status.observedGeneration below metadata.generation: Progressing (the controller has not
--    acted on the latest spec yet; kstatus: InProgress, LatestGenerationNotObserved).
-- 2. Stalled=True: Degraded with its message (an invalid spec, an update the API server refused,
--    a policy error, a job Failed or Lost that is not restarted, a held pod template change).
-- 3. Reconciling=True: Progressing with its message (creating, updating, taking the savepoint of
--    an update, recovering, cleaning up, submitting or restarting the job).
-- 4. Ready=True: Healthy (a running session cluster, a job cluster whose job runs, or whose job
--    Succeeded and whose cleanupPolicy is done), Suspended when the job was Cancelled (it stays
--    down until the spec resumes it, e.g. with a new job.fromSavepoint).
-- 5. Ready=False otherwise: Suspended for a job Flink reports SUSPENDED, else Progressing.
-- A status without these conditions (a controller before them) is judged from status.state:
-- PolicyError=True, Ready=False InvalidSpec or UpdateRefused, a job Failed or Lost: Degraded;
-- Running or, after a Succeeded job, Stopped: Healthy; else Progressing.
local hs = { status = "Progressing", message = "waiting for the controller to write the cluster's status" }

local function condition(st, ctype)
  if type(st.conditions) ~= "table" then return nil end
  for _, c in ipairs(st.conditions) do
    if type(c) == "table" and c.type == ctype then return c end
  end
  return nil
end

-- A whole number written without the string library (and without Lua 5.4's ".0" of a float: the
-- object comes decoded from JSON, so gopher-lua's numbers are floats).
local DIGITS = { "0", "1", "2", "3", "4", "5", "6", "7", "8", "9" }
local function whole(n)
  if n < 0 or n % 1 ~= 0 then return tostring(n) end
  local s = ""
  repeat
    local d = n % 10
    s = DIGITS[d + 1] .. s
    n = (n - d) / 10
  until n == 0
  return s
end

local function done(status, message)
  hs.status = status
  if message ~= nil and message ~= "" then hs.message = message end
  return hs
end

local st = obj.status
if type(st) ~= "table" then return hs end
local md = obj.metadata or {}
local gen, seen = tonumber(md.generation), tonumber(st.observedGeneration)
if gen ~= nil and seen ~= nil and seen < gen then
  return done("Progressing", "generation " .. whole(gen) .. " is not observed yet (the status is of generation "
    .. whole(seen) .. ")")
end
local job = type(st.components) == "table" and st.components.job or nil
local job_state = type(job) == "table" and job.state or nil

local stalled, reconciling, ready = condition(st, "Stalled"), condition(st, "Reconciling"), condition(st, "Ready")
if stalled ~= nil or reconciling ~= nil then
  if stalled ~= nil and stalled.status == "True" then return done("Degraded", stalled.message) end
  if reconciling ~= nil and reconciling.status == "True" then return done("Progressing", reconciling.message) end
  if ready ~= nil and ready.status == "True" then
    if job_state == "Cancelled" then return done("Suspended", ready.message) end
    return done("Healthy", ready.message)
  end
  if job_state == "Suspended" then return done("Suspended", ready and ready.message) end
  return done("Progressing", ready and ready.message)
end

-- a status without the kstatus conditions
local policy_error = condition(st, "PolicyError")
if policy_error ~= nil and policy_error.status == "True" then return done("Degraded", policy_error.message) end
if ready ~= nil and ready.status == "False" and (ready.reason == "InvalidSpec" or ready.reason == "UpdateRefused") then
  return done("Degraded", ready.message)
end
if job_state == "Failed" or job_state == "Lost" then
  return done("Degraded", "the job is " .. job_state .. (job.failureReason and (": " .. job.failureReason) or ""))
end
if st.state == "Running" or (st.state == "Stopped" and job_state == "Succeeded") then
  return done("Healthy", "cluster is " .. st.state .. (job_state and (", the job is " .. job_state) or ""))
end
if st.state ~= nil then return done("Progressing", "cluster is " .. st.state) end
return done("Progressing", ready and ready.message)
