-- SPDX-License-Identifier: Apache-2.0
--- policies/settings.lua: the tunables of the policies, one section per policy
-- (`require("settings")` in the sandbox). Not a policy: no hooks and no fixtures of its own; each
-- value is tested through the fixtures of the policy that reads it.
local settings = {}

-- Savepoints (policies/savepoint.lua; the trigger protocol's timeouts are the framework's,
-- lua/fc/savepoints.lua: POLL_SECONDS 5, TRIGGER_TIMEOUT 60, COMPLETE_TIMEOUT 600) ----------

-- seconds: a failed on-demand savepoint (update, cancelRequested) is taken again this much later
settings.SAVEPOINT_RETRY_SECONDS = 30
-- reasons whose savepoint ends the job with Flink's stop-with-savepoint (drain false); the
-- others, and these when absent or false, take a savepoint and then cancel ({}: never stop)
settings.SAVEPOINT_STOP_REASONS = { ["job cancel"] = true, update = true }

return settings
