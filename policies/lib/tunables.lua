-- SPDX-License-Identifier: Apache-2.0
--- lib.tunables: the check of policies/settings.lua (its hook `check`, run by the fixture
-- settings/shipped): each tunable the policies read is of the kind they need.
local util = require("fc.util")

local tunables = {}

-- What each value must be: "count" a whole number >= 0, "positive" a number > 0, "factor" a
-- number >= 1, "duration" a text "<n>s|m|h|d", "reasons" a table of texts to true or false,
-- "checkpointtype" one of Flink's checkpoint types, a trailing "?" also nil. A name missing here
-- is not checked.
local KINDS = {
  JOB_POLL_SECONDS = "positive", JOB_LOST_AFTER_SECONDS = "count", JOB_LOST_AFTER_SECONDS_HA = "count",
  JOB_FAILURE_REASON_MAX = "positive", JOB_EXCEPTIONS_RETRY_SECONDS = "count",
  RESTART_INITIAL_DELAY_SECONDS = "count", RESTART_BACKOFF_FACTOR = "factor", RESTART_MAX_DELAY_SECONDS = "count",
  RESTART_MAX_ATTEMPTS = "count", RESTART_RESET_AFTER_SECONDS = "count",
  HEALTH_RESTART_THRESHOLD = "count?", HEALTH_RESTART_WINDOW = "duration",
  HEALTH_CHECKPOINT_PROGRESS_WINDOW = "duration?",
  ROLLBACK_STABLE_SECONDS = "count", ROLLBACK_DEFAULT_TIMEOUT_SECONDS = "positive",
  SAVEPOINT_RETRY_SECONDS = "count", SAVEPOINT_STOP_REASONS = "reasons", AUTO_CHECKPOINT_TYPE = "checkpointtype?",
}
local VALID = {
  checkpointtype = function(v) return v == "CONFIGURED" or v == "FULL" or v == "INCREMENTAL" end,
  count = function(v) return type(v) == "number" and v >= 0 and v % 1 == 0 end,
  positive = function(v) return type(v) == "number" and v > 0 and v < math.huge end,
  factor = function(v) return type(v) == "number" and v >= 1 and v < math.huge end,
  duration = function(v) return type(v) == "string" and v:match("^%d+[smhd]$") ~= nil end,
  reasons = function(v)
    if type(v) ~= "table" then return false end
    for k, b in pairs(v) do
      if type(k) ~= "string" or type(b) ~= "boolean" then return false end
    end
    return true
  end,
}
local SAYS = { count = "a whole number >= 0", positive = "a number > 0", factor = "a number >= 1",
  duration = "a duration such as 30s, 5m, 1h",
  checkpointtype = "CONFIGURED, FULL or INCREMENTAL", reasons = "a table of reason texts to true or false" }

--- tunables.check(settings) -> {errors={{path="settings.<NAME>", message=}...}} (none: every value
-- of `settings` named in KINDS is of its kind).
function tunables.check(settings)
  local errors = {}
  for _, name in ipairs(util.sorted_keys(KINDS)) do
    local kind, optional = KINDS[name]:match("^(%a+)(%??)$")
    local v = settings[name]
    if not (v == nil and optional == "?") and not VALID[kind](v) then
      errors[#errors + 1] = { path = "settings." .. name,
        message = "must be " .. SAYS[kind] .. (optional == "?" and " or nil" or "") .. ", got " .. tostring(v) }
    end
  end
  return { errors = errors }
end

return tunables
