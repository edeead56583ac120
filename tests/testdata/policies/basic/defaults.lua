-- Test policy (tests/render_spec.lua): a tiny defaults hook. "evil" loops forever, "hog" takes 1 MiB a step
-- (the memory cap, not the time budget, stops it, also under ASan), "boom" raises; others get defaults.
local util = require("fc.util")

local defaults = {}

--- apply(cluster) -> cluster with metadata.namespace "default" and spec.taskManager.replicas
-- kept as given (nil when absent).
function defaults.apply(c)
  if c.metadata.name == "evil" then
    while true do end
  elseif c.metadata.name == "hog" then
    local t = {}
    for i = 1, math.maxinteger do t[i] = string.rep(string.rep("x", 1024), 1024) end
    return t
  elseif c.metadata.name == "boom" then
    error("boom requested")
  end
  local out = util.deepcopy(c)
  out.metadata.namespace = out.metadata.namespace or "default"
  out.spec.taskManager = out.spec.taskManager or {}
  return out
end

return defaults
