-- Test policy (tests/render_spec.lua): replicas must be >= 1; unknown spec fields warn.
local validate = {}

local KNOWN = { image = true, jobManager = true, taskManager = true, job = true, flinkProperties = true }

--- check({cluster=, raw=, old=}) -> {errors=[{path, message}], warnings=[{path, message}]}
function validate.check(input)
  local errors, warnings = {}, {}
  local replicas = input.cluster.spec.taskManager.replicas
  if type(replicas) ~= "number" or replicas < 1 then
    errors[#errors + 1] = { path = "spec.taskManager.replicas", message = "must be >= 1" }
  end
  local keys = {}
  for k in pairs(input.raw.spec) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    if not KNOWN[k] then warnings[#warnings + 1] = { path = "spec." .. k, message = "unknown field" } end
  end
  return { errors = errors[1] and errors or nil, warnings = warnings[1] and warnings or nil }
end

return validate
