-- SPDX-License-Identifier: Apache-2.0
--- lib.control: the user-control annotation (the original operator's
-- `flinkclusters.flinkoperator.k8s.io/user-control`), read by job.lua (progress in
-- status.control, removal of the annotation) and savepoint.lua (the savepoint it asks for).
-- Pure; safe inside the policy sandbox.
local clock = require("lib.clock")

local control = {}

--- The annotation key and the two values it takes.
control.ANNOTATION = "flinkclusters.flinkoperator.k8s.io/user-control"
control.SAVEPOINT = "savepoint"
control.JOB_CANCEL = "job-cancel"

--- Seconds after a control finished during which its annotation, still set, is taken as the
-- removal not yet observed (the merge patch and the next watch event race), not as a new
-- request for the same control.
control.SETTLE_SECONDS = 10

--- control.requested(cluster) -> the annotation's value (any string) or nil when unset.
-- `cluster` is a FlinkCluster table; metadata and annotations may be absent.
function control.requested(cluster)
  return ((cluster.metadata or {}).annotations or {})[control.ANNOTATION]
end

--- control.just_finished(status_control, name, now) -> bool: `status_control` (status.control,
-- {name, state, updateTime=<RFC 3339>} or nil) is control `name`, it is not Progressing and its
-- updateTime is less than SETTLE_SECONDS before `now` (unix seconds).
function control.just_finished(status_control, name, now)
  if not status_control or status_control.name ~= name or status_control.state == "Progressing" then
    return false
  end
  local at = clock.parse(status_control.updateTime)
  return at ~= nil and now - at < control.SETTLE_SECONDS
end

return control
