-- SPDX-License-Identifier: Apache-2.0
--- fc.trigger: the trigger ids of our savepoints and stops (Flink's TriggerId: 32 lowercase
-- hex, flink-rest-notes.md "Async operation pattern"). Flink keys a savepoint operation by the
-- id the client sends, so the same trigger sent twice is one savepoint and its outcome can be
-- looked up by the id after a controller restart (fc.savepoints records it in the status before
-- the request). Pure, scalars only: policies may require it (fc.restsubmit makes its job ids
-- with it).
local trigger = {}

--- trigger.id(now, previous) -> 32 lowercase hex: a new trigger id for a savepoint or stop
-- requested at `now` (unix seconds): the time in 8 hex digits, then a sequence number in 24
-- (one more than `previous`'s when that id is of the same second, else 0), so the ids of one
-- job never repeat and sort by time. Pure: the same inputs give the same id.
function trigger.id(now, previous)
  local t = string.format("%08x", math.floor(now) & 0xffffffff)
  local seq = 0
  if type(previous) == "string" and previous:sub(1, 8) == t then
    seq = (tonumber(previous:sub(-8), 16) or 0) + 1
  end
  return t .. string.rep("0", 16) .. string.format("%08x", seq & 0xffffffff)
end

return trigger
