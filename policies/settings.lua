-- SPDX-License-Identifier: Apache-2.0
--- settings.lua: the policies' tunables, one section per policy (`require("settings")` in the
-- sandbox). No hooks and no fixtures of its own: each value is tested through the fixtures of the
-- policy that reads it. Change a value here, run `flink-controller test --policy-dir <dir>`.
local settings = {}

-- Savepoints (policies/savepoint.lua; the trigger protocol's own timeouts are the framework's,
-- fc.savepoints: POLL_SECONDS 5, TRIGGER_TIMEOUT 60, COMPLETE_TIMEOUT 600)

--- Seconds to wait before retrying a failed on-demand savepoint (update, cancelRequested).
settings.SAVEPOINT_RETRY_SECONDS = 30
--- Reasons whose savepoint ends the job with Flink's stop-with-savepoint (absent or false: a
-- savepoint, then a cancel).
settings.SAVEPOINT_STOP_REASONS = { ["job cancel"] = true, update = true }

return settings
