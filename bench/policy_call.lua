-- SPDX-License-Identifier: Apache-2.0
--- Cost of one policy call in the production host (core/lhost.c through fc.sandbox): mean
-- microseconds of CPU per host.call over N calls (default 2000) of
--   cluster.desired  on policies/testdata/cluster/session-full (defaulted first),
--   defaults.apply   on the same manifest,
--   status.statefulset_state on a small StatefulSet (a policy whose hook does almost nothing),
-- after 50 warm-up calls each, in 5 rounds of N calls: the best round's mean (the least
-- disturbed by other processes on a shared machine) and the median round's. Run from the
-- repository root after `make`:
--   lua5.4 bench/policy_call.lua [N]
-- Prints one line per hook: "<policy>.<hook> <best us> us/call (<calls/s> calls/s), median <us> us".
local root = os.getenv("FC_ROOT") or "."
package.path = root .. "/lua/?.lua;" .. package.path
package.cpath = root .. "/build/lib/?.so;" .. package.cpath
local lyaml = require("lyaml")
local host = require("fc.sandbox")

local n = tonumber(arg[1]) or 2000
host.configure({ policy_dir = root .. "/policies" })

local f = assert(io.open(root .. "/policies/testdata/cluster/session-full/input.yaml"))
local manifest = lyaml.load(f:read("a"))
f:close()

local function must(ok, res)
  if not ok then error("bench/policy_call.lua: " .. tostring(res), 0) end
  return res
end

local defaulted = must(host.call("defaults", "apply", manifest))
local cases = {
  { "cluster", "desired", { cluster = defaulted } },
  { "defaults", "apply", manifest },
  { "status", "statefulset_state", { spec = { replicas = 1 }, status = { readyReplicas = 1, replicas = 1,
    updatedReplicas = 1, currentReplicas = 1, observedGeneration = 1 }, metadata = { generation = 1 } } },
}
for _, c in ipairs(cases) do
  for _ = 1, 50 do must(host.call(c[1], c[2], c[3])) end
  local rounds = {}
  for r = 1, 5 do
    local t0 = os.clock()
    for _ = 1, n do must(host.call(c[1], c[2], c[3])) end
    rounds[r] = (os.clock() - t0) / n * 1e6
  end
  table.sort(rounds)
  print(string.format("%s.%s %.1f us/call (%.0f calls/s), median %.1f us", c[1], c[2], rounds[1],
    1e6 / rounds[1], rounds[3]))
end
