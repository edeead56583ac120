-- SPDX-License-Identifier: Apache-2.0
--- fc.flink: the one owner of the Flink REST protocol (trusted framework code).
--
-- Policies say what they want done to a job as lifecycle intents; this module maps each intent
-- to a Flink REST request (the `flink` action the C core sends) and decodes the core's raw
-- answers into the view the policies read. The core moves bytes only: it sends the request and
-- records, under the action's `id`, the intent it came from, the HTTP status, the body text and
-- the transport error (docs/contracts.md, "Reconcile"). Nothing else in the product builds a
-- Flink URL or reads Flink's JSON, so a Flink version with another REST API is a change here.
--
-- Reference: Flink 1.20's REST API (shared/reference/flink-rest-v1-dispatcher.yml and
-- flink-rest-notes.md). Flink 2.3 answers every intent below the same way; its
-- /jobs/<id>/exceptions lacks the deprecated root-exception, read here only as a fallback
-- (answers of both recorded from real JobManagers: tests/testdata/flink-rest/, checked through
-- flink.view by tests/flink_rest_spec.lua). Intents (`kind`, then the fields each needs):
--   list_jobs                                  GET /jobs/overview
--   job_exceptions  job_id                     GET /jobs/<job_id>/exceptions?maxExceptions=1
--   job_restarts    job_id                     GET /jobs/<job_id>/metrics?get=numRestarts (the job's
--                                              restart counter: the job details of 1.20 and 2.x
--                                              carry none; the metric is in both)
--   job_checkpoints job_id                     GET /jobs/<job_id>/checkpoints
--   savepoint       id, job_id, target_directory
--                                              POST /jobs/<job_id>/savepoints
--                                              {"target-directory", "cancel-job": false, "triggerId": id}
--   stop            id, job_id, target_directory
--                                              POST /jobs/<job_id>/stop
--                                              {"targetDirectory", "drain": false, "triggerId": id}
--   savepoint_status id, job_id                GET /jobs/<job_id>/savepoints/<id> (savepoint or stop)
--   checkpoint      id, job_id [, checkpoint_type]
--                                              POST /jobs/<job_id>/checkpoints (Flink >= 1.19)
--                                              {"triggerId": id, "checkpointType": checkpoint_type
--                                              (CONFIGURED | FULL | INCREMENTAL; absent: Flink's
--                                              default, CONFIGURED)}
--   checkpoint_status id, job_id               GET /jobs/<job_id>/checkpoints/<id>
--   cancel          job_id                     PATCH /jobs/<job_id>?mode=cancel
--   dispose_savepoint id, location             POST /savepoint-disposal {"savepoint-path": location}
--   dispose_status  id, request_id             GET /savepoint-disposal/<request_id>
--   list_taskmanagers                          GET /taskmanagers (Native TaskManagers: who registered)
--   upload_jar      id, jar_url [, max_bytes, timeout_seconds]
--                                              POST /jars/upload: the core downloads jar_url
--                                              (http or https, at most max_bytes, within
--                                              timeout_seconds) and sends it as the multipart
--                                              part "jarfile" (application/x-java-archive)
--   run_jar         id (the job id to give), jar_id [, entry_class, args, parallelism,
--                   savepoint_path, allow_non_restored_state]
--                                              POST /jars/<jar_id>/run {"entryClass",
--                                              "programArgsList", "parallelism", "jobId": id,
--                                              "savepointPath", "allowNonRestoredState"}
--   delete_jar      id (the job id the jar was uploaded for), jar_id
--                                              DELETE /jars/<jar_id> (the JobManager keeps an
--                                              upload in its web.upload.dir until then)
-- `id` of a savepoint, stop or checkpoint is the policy's trigger id (32 lowercase hex, Flink's TriggerId):
-- Flink keys the operation by it, so the same trigger sent twice is one savepoint
-- (flink-rest-notes.md, "Async operation pattern" 3), and its outcome can be looked up by it.
-- Such triggers are sent only after the status naming them is written (`after_status`): a
-- controller that dies in between finds the id in the status and looks the savepoint up. The
-- same for a submission: the job id is the policy's (JarRunRequestBody.jobId), in the status
-- before the run request, so the job is known at once and never submitted twice.
local cjson = require("cjson")
local codec = require("fc.codec")

local flink = {}

--- Bytes of a failed job's stack trace kept for the policies (cut on a UTF-8 boundary).
flink.EXCEPTION_MAX = 8192
--- Bytes of the first line of a savepoint's failure cause kept for the policies.
flink.FAILURE_MAX = 400
--- Largest jar an upload_jar intent downloads (bytes on disk: the core writes it to a
-- temporary file and uploads it from there; the download fails beyond it) and how long the
-- download may take (seconds), unless the intent says otherwise.
flink.JAR_MAX_BYTES = 1024 * 1024 * 1024
flink.JAR_TIMEOUT_SECONDS = 120
--- Seconds a /jars/<id>/run may take (Flink runs the job's main() to build its graph).
flink.RUN_TIMEOUT_SECONDS = 60

local HEX32 = "^" .. string.rep("%x", 32) .. "$"
local HTTP_URL = "^https?://[^%s]+$"
local JAR_ID = "^[%w][%w%-_.]*$"
--- The checkpoint types of POST /jobs/<id>/checkpoints (CheckpointTriggerRequestBody).
local CHECKPOINT_TYPES = { CONFIGURED = true, FULL = true, INCREMENTAL = true }

-- What a pattern of need() asks for, said in its error.
local WHAT = { [HEX32] = "32 hex digits", [HTTP_URL] = "an http:// or https:// URL",
  [JAR_ID] = "a jar id (letters, digits, '-', '_', '.')" }

-- intent[field] when it is a non-empty string matching `pattern` (when given); else raises
-- "<kind> intent: <field> must be <what the pattern asks for>".
local function need(intent, field, pattern)
  local v = intent[field]
  if type(v) ~= "string" or v == "" or (pattern and not v:match(pattern)) then
    error(tostring(intent.kind) .. " intent: " .. field .. " must be "
      .. (pattern and WHAT[pattern] or "a non-empty string"), 0)
  end
  return v
end

local function opt_int(intent, field)
  local v = intent[field]
  if v == nil then return nil end
  if math.type(v) ~= "integer" and not (type(v) == "number" and v == math.floor(v)) or v < 1 then
    error(tostring(intent.kind) .. " intent: " .. field .. " must be a positive integer", 0)
  end
  return math.tointeger(v)
end

-- kind -> function(intent) -> answer id, method, path, body, after_status, extra action fields
local REQUEST = {
  list_jobs = function()
    return "list_jobs", "GET", "/jobs/overview"
  end,
  job_exceptions = function(i)
    local jid = need(i, "job_id", HEX32)
    return "job_exceptions/" .. jid, "GET", "/jobs/" .. jid .. "/exceptions?maxExceptions=1"
  end,
  job_restarts = function(i)
    local jid = need(i, "job_id", HEX32)
    return "job_restarts/" .. jid, "GET", "/jobs/" .. jid .. "/metrics?get=numRestarts"
  end,
  job_checkpoints = function(i)
    local jid = need(i, "job_id", HEX32)
    return "job_checkpoints/" .. jid, "GET", "/jobs/" .. jid .. "/checkpoints"
  end,
  savepoint = function(i)
    local jid, id = need(i, "job_id", HEX32), need(i, "id", HEX32)
    return id, "POST", "/jobs/" .. jid .. "/savepoints",
      { ["target-directory"] = need(i, "target_directory"), ["cancel-job"] = false, triggerId = id }, true
  end,
  stop = function(i)
    -- drain false: no MAX_WATERMARK, the job resumes from the savepoint as it was
    -- (StopWithSavepointRequestBody is camelCase, unlike /savepoints)
    local jid, id = need(i, "job_id", HEX32), need(i, "id", HEX32)
    return id, "POST", "/jobs/" .. jid .. "/stop",
      { targetDirectory = need(i, "target_directory"), drain = false, triggerId = id }, true
  end,
  savepoint_status = function(i)
    local jid, id = need(i, "job_id", HEX32), need(i, "id", HEX32)
    return id, "GET", "/jobs/" .. jid .. "/savepoints/" .. id
  end,
  checkpoint = function(i)
    local jid, id = need(i, "job_id", HEX32), need(i, "id", HEX32)
    local ctype = i.checkpoint_type
    if ctype ~= nil and not CHECKPOINT_TYPES[ctype] then
      error("checkpoint intent: checkpoint_type must be CONFIGURED, FULL or INCREMENTAL", 0)
    end
    return "checkpoint/" .. id, "POST", "/jobs/" .. jid .. "/checkpoints", { triggerId = id, checkpointType = ctype },
      true
  end,
  checkpoint_status = function(i)
    local jid, id = need(i, "job_id", HEX32), need(i, "id", HEX32)
    return "checkpoint/" .. id, "GET", "/jobs/" .. jid .. "/checkpoints/" .. id
  end,
  dispose_savepoint = function(i)
    -- `id`: the disposed savepoint's trigger id, only where the answer is kept; Flink takes no
    -- trigger id of ours here and answers its own (request-id), which dispose_status polls
    local id = need(i, "id", HEX32)
    return "dispose/" .. id, "POST", "/savepoint-disposal", { ["savepoint-path"] = need(i, "location") }, true
  end,
  dispose_status = function(i)
    local id, rid = need(i, "id", HEX32), need(i, "request_id", HEX32)
    return "dispose/" .. id, "GET", "/savepoint-disposal/" .. rid
  end,
  cancel = function(i)
    local jid = need(i, "job_id", HEX32)
    return "cancel/" .. jid, "PATCH", "/jobs/" .. jid .. "?mode=cancel"
  end,
  list_taskmanagers = function()
    return "list_taskmanagers", "GET", "/taskmanagers"
  end,
  upload_jar = function(i)
    local id, url = need(i, "id", HEX32), need(i, "jar_url", HTTP_URL)
    local timeout = opt_int(i, "timeout_seconds") or flink.JAR_TIMEOUT_SECONDS
    return "upload/" .. id, "POST", "/jars/upload", nil, true,
      { upload = { url = url, max_bytes = opt_int(i, "max_bytes") or flink.JAR_MAX_BYTES, timeout_ms = timeout * 1000 },
        timeout_ms = timeout * 1000 }
  end,
  run_jar = function(i)
    local id, jar = need(i, "id", HEX32), need(i, "jar_id", JAR_ID)
    local args = {}
    for n, a in ipairs(type(i.args) == "table" and i.args or {}) do
      if type(a) ~= "string" then error("run_jar intent: args[" .. (n - 1) .. "] must be a string", 0) end
      args[n] = a
    end
    local body = { jobId = id, entryClass = i.entry_class, parallelism = opt_int(i, "parallelism"),
      savepointPath = i.savepoint_path, allowNonRestoredState = i.allow_non_restored_state and true or nil,
      programArgsList = #args > 0 and args or nil }
    return "run/" .. id, "POST", "/jars/" .. jar .. "/run", body, true,
      { timeout_ms = flink.RUN_TIMEOUT_SECONDS * 1000 }
  end,
  delete_jar = function(i)
    local id, jar = need(i, "id", HEX32), need(i, "jar_id", JAR_ID)
    return "delete_jar/" .. id, "DELETE", "/jars/" .. jar
  end,
}

--- flink.KINDS: the intent kinds this module maps (set of names).
flink.KINDS = {}
for k in pairs(REQUEST) do flink.KINDS[k] = true end

--- flink.action(intent, target) -> {op="flink", id=, intent=, method=, path=, body=, target=,
--   after_status=<true for savepoint, stop, checkpoint, dispose_savepoint, upload_jar, run_jar>,
--   timeout_ms=<when not the core's default>, upload={url=, max_bytes=, timeout_ms=} (upload_jar: what the core
--   downloads)}
-- `target` = {scheme, namespace, service, port}: the JobManager's REST Service, named by the
-- policy (job.observe's `jobmanager`); the core reaches it by DNS or the API server's proxy.
-- `id`: where the core records the answer (answers[id]); `intent` (a copy of the policy's
-- intent, the fields above) goes back with the answer so that it can be decoded.
-- Errors: raises "<kind> intent: <message>" for an unknown kind or a missing field.
function flink.action(intent, target)
  if type(intent) ~= "table" or not REQUEST[intent.kind] then
    error("intent: unknown kind " .. tostring(type(intent) == "table" and intent.kind or intent)
      .. " (one of list_jobs, job_exceptions, job_restarts, job_checkpoints, savepoint, stop, savepoint_status, "
      .. "checkpoint, checkpoint_status, dispose_savepoint, dispose_status, cancel, upload_jar, run_jar, "
      .. "delete_jar)", 0)
  end
  local id, method, path, body, after, extra = REQUEST[intent.kind](intent)
  local copy = {}
  for k, v in pairs(intent) do
    if type(v) == "string" or type(v) == "number" or type(v) == "boolean" then copy[k] = v end
  end
  local a = { op = "flink", id = id, intent = copy, method = method, path = path, body = body,
    target = target, after_status = after or nil }
  for k, v in pairs(extra or {}) do a[k] = v end
  return a
end

-- The JSON object or array of a Flink answer's body, normalized as every decoded document
-- (fc.codec: a null is left out, in a map or a list; Flink 2.3 answers "schedulerType": null
-- for a job that is still initializing, and a null is no value a policy may be handed), or nil
-- for no body, invalid JSON, a scalar or a value fc.codec refuses (too deep, not finite).
local function decode(text)
  if type(text) ~= "string" or text == "" then return nil end
  local ok, v = pcall(cjson.decode, text)
  if not ok or type(v) ~= "table" then return nil end
  return codec.normalize(v, true)
end

local function str(v)
  if type(v) == "string" then return v end
  return nil
end

-- "<transport error | HTTP status>: <Flink's errors joined by '; '>"
local function error_text(a, doc)
  local parts = {}
  for _, e in ipairs(type(doc) == "table" and type(doc.errors) == "table" and doc.errors or {}) do
    if type(e) == "string" then parts[#parts + 1] = e end
  end
  local head = (type(a.error) == "string" and a.error ~= "") and a.error or ("HTTP " .. tostring(a.status or 0))
  if #parts == 0 then return head end
  return (head .. ": " .. table.concat(parts, "; ")):sub(1, 1024)
end

local function ok_status(a)
  local s = tonumber(a.status) or 0
  return s >= 200 and s < 300 and not (type(a.error) == "string" and a.error ~= "")
end

local function utf8_cut(s, n)
  if #s <= n then return s end
  while n > 0 and (s:byte(n + 1) or 0) & 0xC0 == 0x80 do n = n - 1 end
  return s:sub(1, n)
end

-- The first line of an async operation's failure-cause stack trace (at most FAILURE_MAX
-- bytes), else its class, else `default`; nil when the operation has no failure-cause (the
-- field `key`, "failure-cause" unless given: a checkpoint's CheckpointInfo says failureCause).
local function failure_of(operation, default, key)
  local fc = operation[key or "failure-cause"]
  if type(fc) ~= "table" then return nil end
  local trace = str(fc["stack-trace"]) or ""
  local line = trace:match("^[^\r\n]*") or ""
  return line ~= "" and utf8_cut(line, flink.FAILURE_MAX) or (str(fc.class) or default)
end

-- The async operations of a trigger id (Flink's "Async operation pattern"): kind -> the view's
-- map of their answers.
local ASYNC = { savepoint = "operations", stop = "operations", savepoint_status = "operations",
  checkpoint = "checkpoints", checkpoint_status = "checkpoints" }

-- Keeps `op` in by[id] unless an answer of a later time is there.
local function latest(by, id, op)
  local prev = by[id]
  if not prev or (prev.time or 0) <= op.time then by[id] = op end
end

--- flink.view(raw) -> {reachable=bool, jobs={{jid=, state=, ["start-time"]=<ms>}...}, jobs_time=,
--   operations={<trigger id>={...}}, checkpoints={<trigger id>={...}}, disposals={<savepoint trigger id>={...}},
--   exceptions={<job id>={...}}, submissions={<job id>={...}},
--   health={<job id>={restarts=, restarts_time=, checkpoints={completed=, latest_ack=, latest=}, checkpoints_time=}},
--   taskmanagers={ids=, time=} (only once answered), since=<unix s, 0 when not told>}
-- `raw` = the snapshot's `flink` from the core: {answers={<id>={intent=, status=<HTTP status,
-- 0 when Flink did not answer>, body=<text>, error=<transport error or "">, time=<unix s>}},
-- since=<unix s: this controller process keeps answers for the cluster since then; a request
-- made before it, by an earlier process, will never be answered>}.
--   list_jobs: 2xx with a `jobs` list -> reachable=true, jobs=that list; else reachable=false.
--   savepoint / stop (the trigger): 2xx -> operations[id] = {phase="accepted", time};
--     else {phase="trigger", error=<text>, http=<status>, time} (http 0: no answer from Flink,
--     the trigger may or may not have arrived).
--   savepoint_status: 2xx -> operations[id] = {phase="status", status=<status.id: IN_PROGRESS |
--     COMPLETED>, location=<operation.location>, failure=<first line of operation.failure-cause's
--     stack trace, at most FAILURE_MAX bytes, else its class>, time}; 404 -> {phase="status",
--     not_found=true, error, time} (Flink does not know the trigger: never arrived, or its
--     result expired, rest.async.store-duration, or was lost with the JobManager); else
--     {phase="status", error, http, time}.
--   checkpoint / checkpoint_status: checkpoints[id] as operations[id] of a savepoint / its
--     savepoint_status, but for the outcome: checkpoint_id=<operation.checkpointId, Flink's
--     checkpoint id> instead of location, failure=<of operation.failureCause>.
--   dispose_savepoint: disposals[id] = 2xx -> {phase="accepted", request_id=<the answer's
--     request-id: Flink's trigger id of the disposal>, time}; else {phase="trigger", error, http, time}.
--   dispose_status: disposals[id] = 2xx -> {phase="status", status=<IN_PROGRESS | COMPLETED>,
--     failure=<as a savepoint's: nil when the disposal succeeded>, trace=<the failure's whole
--     stack trace, at most EXCEPTION_MAX bytes>, time}; 404 -> {phase="status",
--     not_found=true, error, http, time}; else {phase="status", error, http, time}.
--   job_exceptions: exceptions[job id] = 2xx -> {name=<newest exceptionHistory entry's
--     exceptionName>, stacktrace=<its stacktrace, else root-exception, at most EXCEPTION_MAX
--     bytes>, time}; else {error, time}.
--   job_restarts: 2xx with [{id="numRestarts", value="<n>"}] -> health[job id].restarts = n,
--     restarts_time (a metric not yet collected, `[]`: nothing).
--   job_checkpoints: 2xx -> health[job id].checkpoints = {completed=<counts.completed>,
--     latest_ack=<latest.completed.latest_ack_timestamp, ms; 0 when none>, latest=<with a
--     latest.completed: {id=<its id>, path=<its external_path>, timestamp=<latest_ack_timestamp, ms>}>},
--     checkpoints_time.
--   cancel: nothing (the job list tells).
--   list_taskmanagers: 2xx with a `taskmanagers` list -> taskmanagers = {ids=<their `id`s, the
--     TaskManagers' resource ids>, time}; else nothing (a registration is judged only from an answer).
--   upload_jar / run_jar: submissions[id] = {upload={jar_id=<last path component of the
--     answer's filename> | error=, http=, time}, run={job_id=<the answer's jobid> | error=, http=,
--     time}}; delete_jar: submissions[id].delete = {time} | {error, http, time} (a jar Flink does
--     not hold is a 400).
-- `jobs_time` is when the job list was answered (0: never).
-- When two answers share an id (a trigger and its polls), the later one (time) is used.
function flink.view(raw)
  local v = { reachable = false, jobs = {}, jobs_time = 0, operations = {}, checkpoints = {}, disposals = {},
    exceptions = {},
    submissions = {}, health = {},
    since = type(raw) == "table" and math.tointeger(tonumber(raw.since)) or 0 }
  local answers = type(raw) == "table" and type(raw.answers) == "table" and raw.answers or {}
  local ids = {}
  for id in pairs(answers) do ids[#ids + 1] = id end
  table.sort(ids)
  for _, id in ipairs(ids) do
    local a = answers[id]
    local intent = type(a) == "table" and type(a.intent) == "table" and a.intent or {}
    local kind = intent.kind
    local time = tonumber(a.time) or 0
    local ok = type(a) == "table" and ok_status(a)
    local doc = type(a) == "table" and decode(a.body) or nil
    if kind == "list_jobs" then
      if ok and doc and type(doc.jobs) == "table" then
        local jobs = {}
        for _, j in ipairs(doc.jobs) do
          if type(j) == "table" then jobs[#jobs + 1] = j end
        end
        v.reachable, v.jobs, v.jobs_time = true, jobs, time
      end
    elseif ASYNC[kind] then
      local poll = kind == "savepoint_status" or kind == "checkpoint_status"
      local op = { time = time, phase = poll and "status" or "trigger" }
      if ok and not poll then
        op.phase = "accepted"
      elseif ok and doc then
        local operation = type(doc.operation) == "table" and doc.operation or {}
        op.status = str(type(doc.status) == "table" and doc.status.id or nil) or "IN_PROGRESS"
        if ASYNC[kind] == "checkpoints" then
          op.checkpoint_id = math.tointeger(tonumber(operation.checkpointId))
          op.failure = failure_of(operation, "checkpoint failed", "failureCause")
        else
          op.location = str(operation.location)
          op.failure = failure_of(operation, "savepoint failed")
        end
      else
        op.error, op.http = error_text(a, doc), tonumber(a.status) or 0
        if poll and op.http == 404 then op.not_found = true end
      end
      -- a savepoint's answer is kept under its trigger id, a checkpoint's under "checkpoint/<id>"
      local key = ASYNC[kind] == "checkpoints" and str(intent.id) or id
      if key then latest(v[ASYNC[kind]], key, op) end
    elseif (kind == "dispose_savepoint" or kind == "dispose_status") and type(intent.id) == "string" then
      local op = { time = time, phase = kind == "dispose_status" and "status" or "trigger" }
      if ok and kind == "dispose_savepoint" then
        op.phase, op.request_id = "accepted", str(doc and doc["request-id"])
      elseif ok and doc then
        op.status = str(type(doc.status) == "table" and doc.status.id or nil) or "IN_PROGRESS"
        local operation = type(doc.operation) == "table" and doc.operation or {}
        op.failure = failure_of(operation, "disposal failed")
        -- the whole trace: Flink wraps why ("Could not dispose savepoint"), the cause is below
        local fc = operation["failure-cause"]
        local trace = type(fc) == "table" and str(fc["stack-trace"]) or nil
        if trace then op.trace = utf8_cut(trace, flink.EXCEPTION_MAX) end
      else
        op.error, op.http = error_text(a, doc), tonumber(a.status) or 0
        if kind == "dispose_status" and op.http == 404 then op.not_found = true end
      end
      latest(v.disposals, intent.id, op)
    elseif kind == "job_exceptions" and type(intent.job_id) == "string" then
      local e = { time = time }
      if ok and doc then
        local entries = type(doc.exceptionHistory) == "table" and doc.exceptionHistory.entries or nil
        local e0 = type(entries) == "table" and entries[1] or nil
        e0 = type(e0) == "table" and e0 or {}
        e.name = str(e0.exceptionName)
        local trace = str(e0.stacktrace) or str(doc["root-exception"])
        if trace then e.stacktrace = utf8_cut(trace, flink.EXCEPTION_MAX) end
      else
        e.error = error_text(a, doc)
      end
      v.exceptions[intent.job_id] = e
    elseif (kind == "job_restarts" or kind == "job_checkpoints") and type(intent.job_id) == "string" then
      local h = v.health[intent.job_id] or {}
      if ok and type(doc) == "table" and kind == "job_restarts" then
        for _, m in ipairs(doc) do
          local n = type(m) == "table" and m.id == "numRestarts" and math.tointeger(tonumber(m.value)) or nil
          if n then h.restarts, h.restarts_time = n, time end
        end
      elseif ok and type(doc) == "table" and type(doc.counts) == "table" then
        local done = type(doc.latest) == "table" and doc.latest.completed
        done = type(done) == "table" and done or {}
        h.checkpoints = { completed = math.tointeger(tonumber(doc.counts.completed)) or 0,
          latest_ack = math.tointeger(tonumber(done.latest_ack_timestamp)) or 0 }
        local cid = math.tointeger(tonumber(done.id))
        if cid then
          h.checkpoints.latest = { id = cid, path = str(done.external_path),
            timestamp = math.tointeger(tonumber(done.latest_ack_timestamp)) or 0 }
        end
        h.checkpoints_time = time
      end
      v.health[intent.job_id] = h
    elseif kind == "list_taskmanagers" then
      if ok and doc and type(doc.taskmanagers) == "table" then
        local tm_ids = {}
        for _, t in ipairs(doc.taskmanagers) do
          if type(t) == "table" and type(t.id) == "string" then tm_ids[#tm_ids + 1] = t.id end
        end
        v.taskmanagers = { ids = tm_ids, time = time }
      end
    elseif kind == "delete_jar" and type(intent.id) == "string" then
      local sub = v.submissions[intent.id] or {}
      sub.delete = { time = time }
      if not ok then sub.delete.error, sub.delete.http = error_text(a, doc), tonumber(a.status) or 0 end
      v.submissions[intent.id] = sub
    elseif (kind == "upload_jar" or kind == "run_jar") and type(intent.id) == "string" then
      local sub = v.submissions[intent.id] or {}
      local step = { time = time }
      if ok and doc and kind == "upload_jar" and type(doc.filename) == "string" then
        -- the jar id is the last path component of the stored file (flink-rest-notes.md)
        step.jar_id = doc.filename:match("[^/]+$")
      elseif ok and kind == "run_jar" then
        step.job_id = str(doc and doc.jobid) or intent.id
      else
        step.error, step.http = error_text(a, doc), tonumber(a.status) or 0
      end
      sub[kind == "upload_jar" and "upload" or "run"] = step
      v.submissions[intent.id] = sub
    end
  end
  return v
end

return flink
