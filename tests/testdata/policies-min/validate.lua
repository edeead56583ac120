--- Test policy (tests/reconcile_spec.lua): a tiny validate.check: image.name required,
-- taskManager.replicas >= 1; an unknown top-level spec field is a warning.
local validate = {}

local KNOWN = { image = true, jobManager = true, taskManager = true, job = true }

function validate.check(input)
  local spec = input.cluster.spec
  local errors, warnings = {}, {}
  if not (spec.image and spec.image.name) then
    errors[#errors + 1] = { path = "spec.image.name", message = "is required" }
  end
  if type(spec.taskManager.replicas) ~= "number" or spec.taskManager.replicas < 1 then
    errors[#errors + 1] = { path = "spec.taskManager.replicas", message = "must be >= 1" }
  end
  for k in pairs(input.raw.spec or {}) do
    if not KNOWN[k] then warnings[#warnings + 1] = { path = "spec." .. k, message = "unknown field" } end
  end
  return { errors = errors, warnings = warnings }
end

return validate
