-- SPDX-License-Identifier: Apache-2.0
--- fc.trigger: the trigger ids of our savepoints, stops and checkpoints, and how one in flight
-- is followed (trigger.follow) (Flink's TriggerId: 32 lowercase
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

--- trigger.follow(r): one pass's step of an asynchronous Flink operation in flight under our
-- trigger id (a savepoint, a stop, a checkpoint: flink-rest-notes.md "Async operation
-- pattern"), the same order for each (fc.savepoints, fc.checkpoints): COMPLETED -> r.completed(op)
-- (the caller reads the outcome); the trigger refused by Flink (an HTTP status) -> TriggerFailed;
-- older than limits.complete -> Failed; unknown to Flink (404) -> the same trigger again while
-- r.can_resend and younger than limits.trigger, else TriggerFailed; an answer, or none after
-- limits.poll (a restart, a failover: look the id up) -> poll; else wait for the poll.
-- r: {id=<trigger id or nil>, job_id=<or nil>, op=<fc.flink.view's answer of the id, or nil>,
--   t0=<unix s of the trigger>, now=<unix s>, what=<"savepoint" | "checkpoint", for messages>,
--   can_resend=<bool>, limits={poll=, trigger=, complete=} (seconds), completed=function(op),
--   finish=function(state, message), send=function(), poll=function(), requeue=function(seconds)}.
function trigger.follow(r)
  local op, age, lim = r.op, r.now - r.t0, r.limits
  if not r.id or not r.job_id then
    -- written by a controller that recorded no trigger id: nothing to look up
    r.finish("TriggerFailed", "no trigger id recorded for this " .. r.what)
  elseif op and op.status == "COMPLETED" then
    r.completed(op)
  elseif op and op.phase == "trigger" and (op.http or 0) > 0 then
    -- Flink refused the trigger (e.g. 503 leader election, 404 job gone, 400 from a Flink
    -- without the endpoint)
    r.finish("TriggerFailed", tostring(op.error))
  elseif age >= lim.complete then
    r.finish("Failed", r.what .. " not completed after " .. lim.complete .. "s")
  elseif op and op.not_found then
    -- Flink does not know our id: the trigger never arrived (or its result is gone). The same
    -- trigger again while the job runs (one operation however often it arrives).
    if r.can_resend and age < lim.trigger then
      r.send()
      r.requeue(lim.poll)
    else
      r.finish("TriggerFailed", "Flink does not know trigger " .. r.id .. " of job " .. r.job_id
        .. " (" .. tostring(op.error) .. ")")
    end
  elseif op or age >= lim.poll then
    -- accepted, in progress, the last poll unanswered; or no answer in this controller
    -- (triggered by another: a restart, a failover; or still on its way): look the id up
    r.poll()
    r.requeue(lim.poll)
  else
    r.requeue(lim.poll - age)
  end
end

return trigger
