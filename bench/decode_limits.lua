-- SPDX-License-Identifier: Apache-2.0
--- Cost of decoding hostile input (docs/reliability.md): CPU seconds and peak resident
-- memory of fc.codec.decode_documents on the inputs issue 14 names, and what it answered:
--   nested  600 KB of nested flow maps: "a: " .. "{a: " x N .. "1" .. "}" x N
--   bomb    a 680-byte alias bomb: "lol0" to "lol8", each a list of ten references to the one
--           before (10^9 values once expanded)
-- Run from the repository root after `make`: lua5.4 bench/decode_limits.lua nested|bomb
-- (one case per process, so that the peak memory, VmHWM, is that case's alone).
-- Prints "<case> <bytes> bytes: <cpu> ms CPU, peak <MiB> MiB: <first error or 'ok'>".
local root = os.getenv("FC_ROOT") or "."
package.path = root .. "/lua/?.lua;" .. package.path
package.cpath = root .. "/build/lib/?.so;" .. package.cpath
local codec = require("fc.codec")

local inputs = {}

function inputs.nested()
  local n = 600 * 1024 // 5
  return "a: " .. string.rep("{a: ", n) .. "1" .. string.rep("}", n) .. "\n"
end

function inputs.bomb()
  local lines = { 'lol0: &lol0 [' .. string.rep('"lol"', 10, ",") .. "]" }
  for i = 1, 8 do
    lines[#lines + 1] = string.format("lol%d: &lol%d [%s]", i, i, string.rep("*lol" .. (i - 1), 10, ","))
  end
  return table.concat(lines, "\n") .. "\n"
end

local function peak_mib()
  local f = io.open("/proc/self/status")
  if not f then return -1 end
  local kb = f:read("a"):match("VmHWM:%s*(%d+)")
  f:close()
  return (tonumber(kb) or -1) / 1024
end

local name = arg[1]
local make = inputs[name]
if not make then
  io.stderr:write("usage: lua5.4 bench/decode_limits.lua nested|bomb\n")
  os.exit(2)
end
local text = make()
local t0 = os.clock()
local docs, err = codec.decode_documents(text)
local dt = os.clock() - t0
local what = err or (docs[1] and docs[1].error) or "ok"
print(string.format("%s %d bytes: %.2f ms CPU, peak %.1f MiB: %s", name, #text, dt * 1e3, peak_mib(), what))
