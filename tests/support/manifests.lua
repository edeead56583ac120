-- SPDX-License-Identifier: Apache-2.0
--- Reading rendered manifests in specs (deploy/, `kubectl kustomize`, `helm template`): YAML
-- streams as lists of objects, RBAC rules as comparable sets, and the test environment's tools.
local lyaml = require("lyaml")

local fx = require("support.fixtures")

local M = {}

--- The objects of a YAML stream (`text`), empty documents left out.
function M.objects(text)
  local out = {}
  for _, d in ipairs(lyaml.load(text, { all = true })) do
    if type(d) == "table" then out[#out + 1] = d end
  end
  return out
end

--- The objects of the YAML file at `path` (inside the repository).
function M.docs(path) return M.objects(fx.read(fx.path(path))) end

--- The objects of `list` of kind `kind`.
function M.by_kind(list, kind)
  local out = {}
  for _, d in ipairs(list) do
    if d.kind == kind then out[#out + 1] = d end
  end
  return out
end

--- The one object of `list` of kind `kind` named `name` (and in namespace `ns` when given), or nil.
function M.find(list, kind, name, ns)
  for _, d in ipairs(list) do
    if d.kind == kind and d.metadata.name == name and (ns == nil or d.metadata.namespace == ns) then return d end
  end
  return nil
end

--- "Kind/name" (with "namespace/" before the name when it has one) of every object, sorted.
function M.ids(list)
  local out = {}
  for _, d in ipairs(list) do
    local ns = d.metadata.namespace
    out[#out + 1] = d.kind .. "/" .. (ns and ns .. "/" or "") .. d.metadata.name
  end
  table.sort(out)
  return out
end

function M.sorted(t)
  table.sort(t)
  return t
end

--- grants(rules): every (group, resource, verb[, name]) triple as "group/resource:verb[@name]",
-- sorted, so a rule set compares as a set whatever its grouping.
function M.grants(rules)
  local out = {}
  for _, r in ipairs(rules) do
    for _, g in ipairs(r.apiGroups) do
      for _, res in ipairs(r.resources) do
        for _, v in ipairs(r.verbs) do
          if r.resourceNames then
            for _, n in ipairs(r.resourceNames) do out[#out + 1] = g .. "/" .. res .. ":" .. v .. "@" .. n end
          else
            out[#out + 1] = g .. "/" .. res .. ":" .. v
          end
        end
      end
    end
  end
  return M.sorted(out)
end

--- The path of a test environment tool, "kubectl" or "helm": $TESTENV_KUBECTL / $TESTENV_HELM
-- (an environment's env.sh sets them), else the one tests/env/build.sh built (tests/env/tool.sh);
-- nil and the reason when neither exists.
function M.tool(name)
  local v = os.getenv("TESTENV_" .. name:upper())
  if v and v ~= "" then return v end
  local p = assert(io.popen("bash " .. fx.ROOT .. "/tests/env/tool.sh " .. name .. " 2>&1"))
  local out = p:read("a")
  local ok = p:close()
  out = out:gsub("%s+$", "")
  if ok and out ~= "" then return out end
  return nil, out
end

--- Runs the shell command `cmd`; its stdout+stderr and whether it exited 0.
function M.sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1; echo \"exit=$?\""))
  local out = p:read("a")
  p:close()
  local rc = out:match("exit=(%d+)%s*$")
  return (out:gsub("exit=%d+%s*$", "")), rc == "0"
end

--- The container `name` of a Deployment (or of any pod template owner).
function M.container(obj, name)
  for _, c in ipairs(obj.spec.template.spec.containers) do
    if c.name == name then return c end
  end
  return nil
end

--- A copy of list `a` followed by the values of every further list.
function M.concat(a, ...)
  local out = {}
  for _, t in ipairs({ a, ... }) do
    for _, v in ipairs(t) do out[#out + 1] = v end
  end
  return out
end

return M
