-- SPDX-License-Identifier: Apache-2.0
--- fc.contract: the versioned hook contract between the framework and the policies (issue 32,
-- item 2), checked in one place: `contract.call`, which fc.reconcile, fc.render, fc.admission and
-- fc.fixtures call for every policy hook.
--
-- For each hook, `contract.HOOKS["<policy>.<hook>"]` gives
--   input  = {<key> = <kind>}: what the framework passes. Kinds: "table" (absent: {}), "string"
--            (absent: ""), "number" (absent: 0), "boolean" (absent: false), "any" (passed as
--            is), and "<kind>?" (optional: absent stays absent). `contract.call` fills every
--            absent non-optional key, so a policy never needs `input.x or {}`; a present key of
--            another kind is a framework bug (kind "contract").
--   result = {<key> = <kind>} and `check` (fc.shape's check or nil): what the hook returns. A
--            result that is not a table, a present key of another kind, or a failed check is a
--            failure of kind "badresult". Results are checked, not filled: the fixtures compare
--            them as the policy returned them.
--   whole  = true: the input is the FlinkCluster itself (defaults.apply), not a table of keys.
--
-- A policy module may declare the contract it was written for: `contract = "<API_VERSION>"`
-- beside its hooks (fc.host.call returns it as its third result). Another version is a failure
-- of kind "contract": the set is refused (its fixtures fail; the controller keeps the last set).
--
-- Failures: {kind = "error"|"timeout"|"nomem"|"badresult"|"contract", policy = "job",
-- hook = "job.decide", message = "<file>:<line>: <message>" or "<policy>.lua: <hook>: <what>"}.
-- error/timeout/nomem/badresult(not plain data) come from fc.host (core/lhost_budget.c's trip state).
local shape = require("fc.shape")
local savepoints = require("fc.savepoints")
local checkpoints = require("fc.checkpoints")

local contract = {}

contract.API_VERSION = "hooks.flinkoperator.k8s.io/v1"
contract.KINDS = { "error", "timeout", "nomem", "badresult", "contract" }

contract.HOOKS = {
  -- a table; that it is a FlinkCluster of our version (fc.shape.defaults) the reconciler and
  -- render check, not the validate fixtures (whose inputs may be anything)
  ["defaults.apply"] = { whole = true, result = {} },
  ["validate.check"] = {
    input = { cluster = "table", raw = "table", old = "table", admission = "boolean" },
    result = { errors = "table?", warnings = "table?" }, check = shape.validate,
  },
  ["cluster.desired"] = {
    input = { cluster = "table", revision = "string?" },
    result = { objects = "table?", jobmanager = "table?", ha_configmaps = "boolean?" }, check = shape.cluster,
  },
  ["cluster.taskmanager_pod"] = {
    input = { cluster = "table", slots = "number", resource = "table" },
    result = { object = "table" },
    check = function(r)
      if r.object.kind ~= "Pod" or type(r.object.metadata) ~= "table" then return "must return {object=<Pod>}" end
      return nil
    end,
  },
  ["status.components"] = {
    input = { cluster = "table", children = "table", desired = "table", cleanup = "string", taskmanagers = "table?" },
    result = {},
  },
  ["status.compute"] = {
    input = { cluster = "table", components = "table", job = "table?", savepoint = "table?", control = "table?",
      cleanup = "string", updating = "boolean", revision = "table", held = "any", adopted = "table?", now = "number" },
    result = { state = "string", conditions = "table?" },
  },
  ["job.observe"] = {
    input = { cluster = "table", children = "table", flink = "table", now = "number" },
    result = { job = "table", start_time = "number?", flink_state = "string?" },
  },
  -- called by fc.savepoints.pass (the trigger protocol) with the savepoint it followed
  ["savepoint.decide"] = {
    input = { cluster = "table", job = "table", savepoint = "table", start_time = "number", flink = "table",
      update = "table", now = "number" },
    result = { job = "table", outcome = "table?", take = "table?", checkpoint = "table?", intents = "table?",
      events = "table?", requeue_after = "number?" },
    check = function(r) return savepoints.check_take(r.take) or checkpoints.check_ask(r.checkpoint) end,
  },
  -- the result may be the string "ok" for {action = "ok"}: fc.reconcile checks it (caller_checks)
  ["health.decide"] = {
    input = { job = "table", flink_state = "string", start_time = "number", restarts = "table",
      checkpoints = "table", now = "number" },
    caller_checks = true,
  },
  ["rollback.decide"] = {
    input = { settings = "table", revision = "string", since = "string", job = "table", flink_state = "string",
      start_time = "number", restarts = "number?", now = "number" },
    result = { action = "string", reason = "string?", requeue_after = "number?" },
    check = function(r)
      if r.action == "stable" or r.action == "wait" or r.action == "rollback" and r.reason then return nil end
      return "must return {action=\"stable\"|\"wait\"} or {action=\"rollback\", reason=<text>}"
    end,
  },
  ["job.decide"] = {
    input = { cluster = "table", job = "table", flink_state = "string", flink = "table", savepoint = "table",
      outcome = "table", children = "table", components = "table", update = "table", now = "number" },
    result = { job = "table", events = "table?", remove = "table?", cleanup = "string?" },
  },
}

local EMPTY = { table = function() return {} end, string = function() return "" end,
  number = function() return 0 end, boolean = function() return false end }

--- contract.failure(kind, policy, hook, message) -> the failure table (hook "<policy>.<hook>").
function contract.failure(kind, policy, hook, message)
  return { kind = kind, policy = policy, hook = policy .. "." .. hook, message = message }
end

-- Checks the keys of `t` per `spec`, filling the absent ones (in place) when `fill`; nil or
-- "<key> must be a <kind>, got <type>".
local function conform(t, spec, fill)
  for k, want in pairs(spec) do
    local base, optional = want:match("^(%a+)(%??)$")
    local v = t[k]
    if v == nil then
      if fill and optional == "" and EMPTY[base] then t[k] = EMPTY[base]() end
    elseif base ~= "any" and type(v) ~= base then
      return k .. " must be a " .. base .. ", got " .. type(v)
    end
  end
  return nil
end

--- contract.normalize(policy, hook, input) -> input (a shallow copy with every documented key),
-- or nil, "<what>" when a key has another kind. Unknown hooks pass through as given.
function contract.normalize(policy, hook, input)
  local h = contract.HOOKS[policy .. "." .. hook]
  if not h or h.whole then return input end
  if input ~= nil and type(input) ~= "table" then return nil, "input must be a table" end
  local copy = {}
  for k, v in pairs(input or {}) do copy[k] = v end
  local bad = conform(copy, h.input, true)
  if bad then return nil, "input: " .. bad end
  return copy
end

--- contract.check_result(policy, hook, result) -> nil, or "<what>".
function contract.check_result(policy, hook, res)
  local h = contract.HOOKS[policy .. "." .. hook]
  if not h or h.caller_checks then return nil end
  if type(res) ~= "table" then return "must return a table, got " .. type(res) end
  return conform(res, h.result, false) or (h.check and h.check(res)) or nil
end

--- contract.call(host, policy, hook, input) -> true, result | false, failure: the one place a
-- hook is called. The input is normalized (contract.normalize), the declared contract version
-- compared, the result checked (contract.check_result).
function contract.call(host, policy, hook, input)
  local norm, why = contract.normalize(policy, hook, input)
  if not norm then
    return false, contract.failure("contract", policy, hook, policy .. ".lua: " .. hook .. ": " .. why)
  end
  local ok, res, extra = host.call(policy, hook, norm)
  if not ok then
    return false, contract.failure(extra or "error", policy, hook, tostring(res))
  end
  if extra ~= nil and extra ~= contract.API_VERSION then
    return false, contract.failure("contract", policy, hook, string.format(
      "%s.lua: declares contract %q; this controller implements %q", policy, tostring(extra), contract.API_VERSION))
  end
  local bad = contract.check_result(policy, hook, res)
  if bad then
    return false, contract.failure("badresult", policy, hook, policy .. ".lua: " .. hook .. ": " .. bad)
  end
  return true, res
end

return contract
