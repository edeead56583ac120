-- SPDX-License-Identifier: Apache-2.0
--- lib.trigger: the trigger ids of our savepoints and stops (Flink's TriggerId: 32 lowercase
-- hex, flink-rest-notes.md "Async operation pattern"). Flink keys a savepoint operation by the
-- id the client sends, so the same trigger sent twice is one savepoint and its outcome can be
-- looked up by the id after a controller restart (savepoint.lua records it before the request).
local restsubmit = require("fc.restsubmit")

local trigger = {}

--- trigger.id(now, previous) -> 32 lowercase hex: a new trigger id for a savepoint or stop
-- requested at `now` (unix seconds): the time in 8 hex digits, then a sequence number in 24
-- (one more than `previous`'s when that id is of the same second, else 0), so the ids of one
-- job never repeat and sort by time. Pure: the same inputs give the same id. The same ids as a
-- REST submission's job ids (fc.restsubmit.job_id, where they are made).
trigger.id = restsubmit.job_id

return trigger
