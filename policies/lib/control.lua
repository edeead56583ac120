-- SPDX-License-Identifier: Apache-2.0
--- lib.control: the user-control annotation (the original operator's
-- `flinkclusters.flinkoperator.k8s.io/user-control`), read by job.lua (progress in
-- status.control, the acknowledgement or removal of the annotation) and savepoint.lua (the
-- savepoint it asks for). Pure; safe inside the policy sandbox.
--
-- The original operator removes the annotation once the control is done. An annotation kept in
-- Git is then put back by the next sync (kubectl apply, Argo CD, Flux), which asks for the same
-- control again: a savepoint per sync, and with Argo CD's self-heal a savepoint loop. So by
-- default the annotation is left where it is and acknowledged instead: status.control records
-- `acknowledged: true` with the control's name (the annotation's value); while that value stays
-- set nothing new happens; once the annotation is seen absent the acknowledgement is cleared, and
-- setting it again (or setting the other value) asks again. REMOVE_WHEN_DONE = true restores the
-- original's removal, for clients that wait for the annotation to disappear or set the same
-- value again with `kubectl annotate --overwrite`.
local clock = require("lib.clock")

local control = {}

--- The annotation key and the two values it takes.
control.ANNOTATION = "flinkclusters.flinkoperator.k8s.io/user-control"
control.SAVEPOINT = "savepoint"
control.JOB_CANCEL = "job-cancel"

--- Remove the annotation once its control is done (the original operator's behaviour), instead
-- of keeping it and recording `acknowledged: true` in status.control (Git-safe, the default).
control.REMOVE_WHEN_DONE = false

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

--- control.acknowledged(status_control, value) -> bool: `status_control` (status.control or
-- nil) records that the annotation value `value` (a string) was acted on and has stayed set since.
function control.acknowledged(status_control, value)
  return type(status_control) == "table" and status_control.acknowledged == true
    and status_control.name == value
end

--- control.fresh(cluster, status_control, now) -> the annotation's value when it asks for a
-- control now (any string: the caller judges it), else nil: unset, acknowledged, or (with
-- REMOVE_WHEN_DONE) the control it asked for finished less than SETTLE_SECONDS before `now`
-- (unix seconds) and its removal is not observed yet. A Progressing control is the caller's
-- to check first (no new control starts while one is in progress).
function control.fresh(cluster, status_control, now)
  local value = control.requested(cluster)
  if value == nil or control.acknowledged(status_control, value) then return nil end
  if control.REMOVE_WHEN_DONE and control.just_finished(status_control, value, now) then return nil end
  return value
end

return control
