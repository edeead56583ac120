-- SPDX-License-Identifier: Apache-2.0
--- fc.admission: the validating and mutating admission webhook's decisions (AdmissionReview
-- admission.k8s.io/v1), served by core/webhook.c over TLS (docs/admission.md).
--
-- admission.validate(review) and admission.mutate(review) take the decoded AdmissionReview the
-- API server POSTs and return {review = <AdmissionReview with .response>, patch = <JSON Patch
-- ops list> | nil}; core/webhook.c base64-encodes `patch` into response.patch
-- (patchType JSONPatch). Both run the same policies as the controller and render, through
-- fc.host (sandboxed, budgeted):
--   - validate: defaults.apply on request.object (and request.oldObject on UPDATE), then
--     validate.check{cluster, raw, old, admission = true} (admission: also the user-control
--     annotation's rules); refused (allowed false, status 422 Invalid) with one
--     line per error, "<name>: <field path>: <message>"; validate's warnings go to
--     response.warnings (kubectl prints them). On UPDATE an error the old object already had
--     (same path and message, the old object checked as if created) is not held against the
--     update (ratcheting, as the API server does for schema rules): a stored object that an
--     older policy let in can still be updated and deleted.
--   - mutate: answers with a JSON Patch (RFC 6902) from request.object to
--     defaults.apply(request.object); no patch at all when nothing changes, so a no-op
--     `kubectl apply`/`patch` stays a no-op (resourceVersion unchanged).
-- A policy failure refuses the request with "<name>: policy: <file>:<line>: <message>" (the
-- webhook's failurePolicy only covers an unreachable webhook). A FlinkJob is validated by
-- fc.flinkjob.validate (not mutated). Other operations (DELETE, CONNECT) and other kinds are
-- allowed untouched.
local shape = require("fc.shape")
local contract = require("fc.contract")
local util = require("fc.util")

local admission = {}

local REVIEW_API = "admission.k8s.io/v1"

local function host_of(host)
  return host or require("fc.host")
end

-- A response for `req` (uid echoed, as the API server requires).
local function reply(req, response)
  response.uid = type(req) == "table" and req.uid or ""
  return { review = { apiVersion = REVIEW_API, kind = "AdmissionReview", response = response } }
end

local function deny(req, lines)
  return reply(req, { allowed = false, status = { code = 422, reason = "Invalid",
    message = table.concat(lines, "; ") } })
end

local function name_of(obj)
  local meta = type(obj) == "table" and obj.metadata or nil
  if type(meta) == "table" and type(meta.name) == "string" and meta.name ~= "" then return meta.name end
  if type(meta) == "table" and type(meta.generateName) == "string" then return meta.generateName end
  return "FlinkCluster"
end

-- The request when it is one we judge (CREATE or UPDATE of a FlinkCluster object); else nil
-- and the answer: allowed untouched, or denied when it is no AdmissionReview request at all.
local function judged(review)
  local req = type(review) == "table" and review.request or nil
  if type(req) ~= "table" then return nil, deny({}, { "not an AdmissionReview request" }) end
  local obj = req.object
  if (req.operation ~= "CREATE" and req.operation ~= "UPDATE") or type(obj) ~= "table"
    or obj.kind ~= shape.KIND then
    return nil, reply(req, { allowed = true })
  end
  return req
end

local function call(host, policy, hook, input)
  local ok, res = contract.call(host, policy, hook, input)
  if not ok then return false, res.message end
  local bad = shape[policy] and shape[policy](res)
  if bad then return false, string.format("%s.lua: %s: %s", policy, hook, bad) end
  return true, res
end

local function key(e) return tostring(e.path) .. "\0" .. tostring(e.message) end

-- defaults.apply of `obj`: true, defaulted | false, refusal lines. Input that makes the
-- defaults' output malformed (a scalar spec, say) is refused with validate's errors for it.
local function defaulted(host, obj, name)
  local ok, cluster = call(host, "defaults", "apply", obj)
  if ok then return true, cluster end
  local vok, given = call(host, "validate", "check", { cluster = obj, raw = obj, old = {} })
  if vok and given.errors and #given.errors > 0 then
    local lines = {}
    for _, e in ipairs(given.errors) do lines[#lines + 1] = string.format("%s: %s: %s", name, e.path, e.message) end
    return false, lines
  end
  return false, { name .. ": policy: " .. cluster }
end

-- A FlinkJob (CREATE or UPDATE): fc.flinkjob.validate (its own rules, then spec.job through the
-- job cluster's defaults and validate policies); refused with one line per error.
local function validate_job(req, host)
  local obj = req.object
  local name = type(obj.metadata) == "table" and type(obj.metadata.name) == "string" and obj.metadata.name or "FlinkJob"
  local old = req.operation == "UPDATE" and type(req.oldObject) == "table" and req.oldObject or nil
  local ok, errors = require("fc.flinkjob").validate(host, obj, nil, old)
  if not ok then return deny(req, { name .. ": policy: " .. tostring(errors.message) }) end
  if #errors == 0 then return reply(req, { allowed = true }) end
  local lines = {}
  for _, e in ipairs(errors) do lines[#lines + 1] = string.format("%s: %s: %s", name, e.path, e.message) end
  return deny(req, lines)
end

--- admission.validate(review, host) -> {review = AdmissionReview}
-- See the module comment. `host` defaults to fc.host (tests may pass a wrapper of it).
function admission.validate(review, host)
  host = host_of(host)
  local r0 = type(review) == "table" and review.request or nil
  if type(r0) == "table" and (r0.operation == "CREATE" or r0.operation == "UPDATE") and type(r0.object) == "table"
      and r0.object.kind == "FlinkJob" then
    return validate_job(r0, host)
  end
  local req, pass = judged(review)
  if not req then return pass end
  local obj, name = req.object, name_of(req.object)
  -- the namespace comes from the request (a manifest may omit it)
  if type(obj.metadata) == "table" and obj.metadata.namespace == nil and type(req.namespace) == "string" then
    obj = util.deepcopy(obj)
    obj.metadata.namespace = req.namespace
  end
  local ok, cluster = defaulted(host, obj, name)
  if not ok then return deny(req, cluster) end
  local old, old_errors = {}, {}
  if req.operation == "UPDATE" and type(req.oldObject) == "table" then
    ok, old = defaulted(host, req.oldObject, name)
    if not ok then return deny(req, old) end
    local was
    ok, was = call(host, "validate", "check", { cluster = old, raw = req.oldObject, old = {} })
    if ok then
      for _, e in ipairs(was.errors or {}) do old_errors[key(e)] = true end
    end
  end
  local res
  ok, res = call(host, "validate", "check", { cluster = cluster, raw = obj, old = old, admission = true })
  if not ok then return deny(req, { name .. ": policy: " .. res }) end
  local lines, warnings = {}, {}
  for _, e in ipairs(res.errors or {}) do
    if not old_errors[key(e)] then lines[#lines + 1] = string.format("%s: %s: %s", name, e.path, e.message) end
  end
  for _, w in ipairs(res.warnings or {}) do
    warnings[#warnings + 1] = string.format("%s: %s: %s", name, w.path, w.message)
  end
  if #lines > 0 then
    local out = deny(req, lines)
    if #warnings > 0 then out.review.response.warnings = warnings end
    return out
  end
  local response = { allowed = true }
  if #warnings > 0 then response.warnings = warnings end
  return reply(req, response)
end

-- JSON Pointer (RFC 6901) of a path list.
local function pointer(path)
  local parts = {}
  for i, p in ipairs(path) do
    parts[i] = (tostring(p):gsub("~", "~0"):gsub("/", "~1"))
  end
  return "/" .. table.concat(parts, "/")
end

-- JSON Patch ops turning `from` into `to` (objects compared key by key, lists and scalars as
-- wholes), appended to `ops` in key order.
local function is_object(v)
  return type(v) == "table" and (next(v) == nil or not util.is_array(v))
end

local function diff(from, to, path, ops)
  if is_object(from) and is_object(to) then
    for _, k in ipairs(util.sorted_keys(from)) do
      if to[k] == nil then
        path[#path + 1] = k
        ops[#ops + 1] = { op = "remove", path = pointer(path) }
        path[#path] = nil
      end
    end
    for _, k in ipairs(util.sorted_keys(to)) do
      path[#path + 1] = k
      if from[k] == nil then
        ops[#ops + 1] = { op = "add", path = pointer(path), value = to[k] }
      else
        diff(from[k], to[k], path, ops)
      end
      path[#path] = nil
    end
  elseif not util.equal(from, to) then
    ops[#ops + 1] = { op = "replace", path = pointer(path), value = to }
  end
end

--- admission.patch(from, to) -> list of JSON Patch ops (empty when equal).
function admission.patch(from, to)
  local ops = {}
  diff(from, to, {}, ops)
  return ops
end

--- admission.mutate(review, host) -> {review = AdmissionReview, patch = ops | nil}
-- See the module comment.
function admission.mutate(review, host)
  host = host_of(host)
  local req, pass = judged(review)
  if not req then return pass end
  local ok, cluster = defaulted(host, req.object, name_of(req.object))
  if not ok then return deny(req, cluster) end
  local ops = admission.patch(req.object, cluster)
  local out = reply(req, { allowed = true })
  if #ops > 0 then
    out.review.response.patchType = "JSONPatch"
    out.patch = ops
  end
  return out
end

return admission
