--- Test policy (tests/reconcile_spec.lua, #bin): runs policies/job.lua, savepoint.lua and
-- status.lua (copied into lib/ of a temporary policy dir) inside the binary's C sandbox through
-- `render`, and reports what they decided as the data of a ConfigMap. A running job with
-- autoSavepointSeconds 300 that started 300 s ago: the first savepoint is due now (savepoint.decide
-- asks for it; its trigger id is the framework's fc.trigger, which the sandbox allows too).
local trigger = require("fc.trigger")
local job = require("lib.job")
local savepoint = require("lib.savepoint")
local status = require("lib.status")

local policy = {}

function policy.desired(input)
  local c = input.cluster
  c.status = {}
  local now = 1700000300
  local children = {}
  local comps = status.components({ cluster = c, children = children, desired = {}, cleanup = "" })
  local obs = job.observe({ cluster = c, children = children, flink = { reachable = true, jobs = {} }, now = now })
  obs.job.id = "8c2d6f0e4a1b3c5d7e9f00112233aabb"
  obs.job.state = "Running"
  local none = { state = "NotTriggered" }
  local sd = savepoint.decide({ cluster = c, job = obs.job, savepoint = none, start_time = 1700000000, flink = {},
    update = { pending = false }, now = now })
  local jd = job.decide({ cluster = c, job = sd.job, flink_state = "RUNNING", savepoint = none,
    outcome = sd.outcome, children = children, components = comps, update = { pending = false }, now = now })
  local st = status.compute({ cluster = c, components = comps, job = jd.job, savepoint = none,
    cleanup = "", updating = false, revision = { current = "a", next = "a" }, now = now })
  return { objects = { { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "decisions" },
    data = { state = st.state, job = jd.job.state, take = sd.take.reason .. ", stop " .. tostring(sd.take.stop),
      trigger = trigger.id(now, jd.job.lastSavepointTriggerID) } } } }
end

return policy
