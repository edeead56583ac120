-- SPDX-License-Identifier: Apache-2.0
-- scripts/monitoring-dashboard.lua: writes deploy/monitoring/dashboard.json, the Grafana dashboard
-- of the controller and its FlinkClusters (docs/alerts.md "The dashboard"), from the panel list
-- below, so that every panel is made the same way (datasource, variables, layout) and the JSON
-- is never written by hand.
--
--   lua5.4 scripts/monitoring-dashboard.lua deploy/monitoring/dashboard.json   (run by `make monitoring`)
--   lua5.4 scripts/monitoring-dashboard.lua                                    (to stdout)
--
-- Object keys are written in name order (dkjson with every key in `keyorder`), so the output is
-- the same on every run; tests/monitoring_spec.lua fails when the file is not what this writes.
-- Queries: the controller's metrics by the variable `job` (the Prometheus job of the metrics
-- Service), the FlinkClusters' also by `namespace` (the FlinkCluster's namespace: the
-- ServiceMonitor keeps the metric's own label, honorLabels). The per-cluster gauges are exported
-- by every replica from its watch cache, so they are deduplicated with max by their labels.
local json = require("dkjson")

local DS = { type = "prometheus", uid = "${datasource}" }
local JOB = 'job=~"$job"'
local NS = JOB .. ', namespace=~"$namespace"'

-- the dashboard's panels, in rows of 24 columns: { title, type, unit, targets = { {expr, legend} },
-- w, h, description, stack, instant }
local ROWS = {
  { title = "FlinkClusters", panels = {
    { title = "Clusters by state", type = "timeseries", stack = true, unit = "short",
      description = "FlinkClusters by status.state (Unknown: no status yet).",
      targets = { { "sum by (state) (max by (namespace, state) (flink_controller_clusters{" .. NS .. "}))",
        "{{state}}" } } },
    { title = "Jobs by state", type = "timeseries", stack = true, unit = "short",
      description = "Jobs by status.components.job.state (clusters without a job not counted).",
      targets = { { "sum by (state) (max by (namespace, state) (flink_controller_jobs{" .. NS .. "}))",
        "{{state}}" } } },
    { title = "Job restarts (top 10 clusters)", type = "bargauge", unit = "short", instant = true,
      description = "status.components.job.restartCount of the 10 clusters with the most restarts.",
      targets = { { "topk(10, max by (namespace, cluster) (flink_controller_job_restarts{" .. NS .. "}))",
        "{{namespace}}/{{cluster}}" } } },
    { title = "Job restarts in the last hour (top 10 clusters)", type = "timeseries", unit = "short",
      description = "Increase of restartCount over one hour (a resubmitted job starts again at 0).",
      targets = { { "topk(10, max by (namespace, cluster) (increase(flink_controller_job_restarts{" .. NS ..
        "}[1h])))", "{{namespace}}/{{cluster}}" } } },
    { title = "Last savepoint age", type = "bargauge", unit = "s", instant = true,
      description = "Time since each cluster's last successful savepoint (clusters with none not shown). "
        .. "The alert FlinkSavepointTooOld fires over 24 h.",
      targets = { { "sort_desc(time() - max by (namespace, cluster) "
        .. "(flink_controller_job_last_savepoint_timestamp_seconds{" .. NS .. "}))", "{{namespace}}/{{cluster}}" } } },
    { title = "Savepoint and stop failures", type = "timeseries", unit = "short",
      description = "Savepoints and stop-with-savepoints that completed failed, per interval.",
      targets = { { "sum by (namespace, operation) (increase(flink_controller_savepoints_total{" .. NS ..
        ', result="failure"}[$__rate_interval]))', "{{namespace}} {{operation}}" } } },
  } },
  { title = "Flink REST and admission", panels = {
    { title = "Flink REST requests by path and code", type = "timeseries", unit = "reqps", w = 8,
      description = "Requests to the JobManagers' REST API per second (code 0: no response).",
      targets = { { "sum by (path, code) (rate(flink_controller_flink_requests_total{" .. JOB ..
        "}[$__rate_interval]))", "{{path}} {{code}}" } } },
    { title = "Flink REST latency p95 by path", type = "timeseries", unit = "s", w = 8,
      description = "95th percentile of the Flink REST requests' duration.",
      targets = { { "histogram_quantile(0.95, sum by (method, path, le) "
        .. "(rate(flink_controller_flink_request_duration_seconds_bucket{" .. JOB .. "}[$__rate_interval])))",
        "{{method}} {{path}}" } } },
    { title = "Webhook admissions by result", type = "timeseries", unit = "reqps", w = 8,
      description = "Admission reviews of FlinkClusters per second by operation and result.",
      targets = { { "sum by (operation, result) (rate(flink_controller_webhook_admissions_total{" .. JOB ..
        "}[$__rate_interval]))", "{{operation}} {{result}}" } } },
  } },
  { title = "Controller", panels = {
    { title = "Reconciles by result", type = "timeseries", unit = "ops",
      description = "Reconciles per second by result (success, requeue, conflict, error).",
      targets = { { "sum by (result) (rate(flink_controller_reconcile_total{" .. JOB .. "}[$__rate_interval]))",
        "{{result}}" } } },
    { title = "Reconcile errors", type = "timeseries", unit = "ops",
      description = "Reconciles per second that ended in an error.",
      targets = { { "sum by (instance) (rate(flink_controller_reconcile_total{" .. JOB ..
        ', result="error"}[$__rate_interval]))', "{{instance}}" } } },
    { title = "Reconcile duration p95", type = "timeseries", unit = "s",
      description = "95th percentile of the time from taking a key off the work queue to its last answer.",
      targets = { { "histogram_quantile(0.95, sum by (result, le) "
        .. "(rate(flink_controller_reconcile_duration_seconds_bucket{" .. JOB .. "}[$__rate_interval])))",
        "{{result}}" } } },
    { title = "Work queue depth", type = "timeseries", unit = "short",
      description = "Keys ready in the leader's work queue.",
      targets = { { "max by (instance) (flink_controller_workqueue_depth{" .. JOB .. "})", "{{instance}}" } } },
    { title = "Leader", type = "timeseries", unit = "short",
      description = "1 for the replica that holds the leader Lease: exactly one at a time.",
      targets = { { "max by (instance) (flink_controller_leader{" .. JOB .. "})", "{{instance}}" } } },
    { title = "Resident memory", type = "timeseries", unit = "bytes",
      description = "Resident set size of each replica (the container's memory limit is 256 MiB).",
      targets = { { "max by (instance) (process_resident_memory_bytes{" .. JOB .. "})", "{{instance}}" } } },
    { title = "CPU", type = "timeseries", unit = "percentunit",
      description = "CPU time per second of each replica (1 = one core).",
      targets = { { "sum by (instance) (rate(process_cpu_seconds_total{" .. JOB .. "}[$__rate_interval]))",
        "{{instance}}" } } },
    { title = "Build", type = "table", instant = true, w = 16,
      description = "The release, commit and Lua of each replica's binary.",
      targets = { { "max by (instance, version, commit, lua) (flink_controller_build_info{" .. JOB .. "})",
        "" } } },
  } },
}

local id = 0
local function next_id()
  id = id + 1
  return id
end

local function panel(p, x, y, w, h)
  local targets = {}
  for i, t in ipairs(p.targets) do
    targets[i] = { datasource = DS, expr = t[1], legendFormat = t[2], refId = string.char(64 + i),
      instant = p.instant or false, range = not p.instant, format = p.type == "table" and "table" or "time_series" }
  end
  local defaults = { unit = p.unit or "short" }
  local options = {}
  if p.type == "timeseries" then
    defaults.custom = { stacking = { mode = p.stack and "normal" or "none", group = "A" },
      fillOpacity = p.stack and 30 or 10, lineWidth = 1, showPoints = "never" }
    options = { legend = { displayMode = "list", placement = "bottom", showLegend = true },
      tooltip = { mode = "multi", sort = "desc" } }
  elseif p.type == "bargauge" then
    options = { displayMode = "basic", orientation = "horizontal", showUnfilled = true,
      reduceOptions = { calcs = { "lastNotNull" }, fields = "", values = false } }
  elseif p.type == "table" then
    options = { showHeader = true }
  end
  return { id = next_id(), type = p.type, title = p.title, description = p.description, datasource = DS,
    gridPos = { x = x, y = y, w = w, h = h }, targets = targets, options = options,
    fieldConfig = { defaults = defaults, overrides = {} },
    transformations = p.type == "table" and { { id = "organize", options = { excludeByName = { Time = true,
      Value = true } } } } or nil }
end

local function query_var(name, label, query, multi)
  return { type = "query", name = name, label = label, datasource = DS,
    query = { query = query, refId = "PrometheusVariableQueryEditor-VariableQuery", qryType = 1 },
    definition = query, refresh = 2, sort = 1, multi = multi, includeAll = true, allValue = ".*",
    current = { selected = true, text = { "All" }, value = { "$__all" } }, options = {}, hide = 0 }
end

local function dashboard()
  local panels = {}
  local y = 0
  for _, row in ipairs(ROWS) do
    panels[#panels + 1] = { id = next_id(), type = "row", title = row.title, collapsed = false,
      gridPos = { x = 0, y = y, w = 24, h = 1 }, panels = {} }
    y = y + 1
    local x = 0
    for _, p in ipairs(row.panels) do
      local w, h = p.w or 12, p.h or 8
      if x + w > 24 then
        x, y = 0, y + h
      end
      panels[#panels + 1] = panel(p, x, y, w, h)
      x = x + w
    end
    y = y + 8
  end
  return {
    uid = "flink-controller", title = "Flink controller", description =
      "FlinkClusters, their jobs and savepoints, and the flink-controller that runs them (deploy/monitoring).",
    tags = { "flink", "flink-controller" }, editable = true, graphTooltip = 1, schemaVersion = 39, version = 1,
    time = { from = "now-6h", to = "now" }, refresh = "30s", timezone = "browser", links = {},
    annotations = { list = {} }, panels = panels,
    templating = { list = {
      { type = "datasource", name = "datasource", label = "Data source", query = "prometheus", hide = 0,
        current = setmetatable({}, { __jsontype = "object" }), options = {}, refresh = 1, regex = "" },
      query_var("job", "Controller job", "label_values(flink_controller_build_info, job)", false),
      query_var("namespace", "Namespace", 'label_values(flink_controller_clusters{job=~"$job"}, namespace)', true),
    } },
  }
end

-- every key of every object of `v`, sorted: dkjson's keyorder, so objects come out in name order
local function all_keys(v, seen, out)
  if type(v) ~= "table" then return out end
  for k, x in pairs(v) do
    if type(k) == "string" and not seen[k] then
      seen[k] = true
      out[#out + 1] = k
    end
    all_keys(x, seen, out)
  end
  return out
end

local d = dashboard()
local keys = all_keys(d, {}, {})
table.sort(keys)
local text = assert(json.encode(d, { indent = true, keyorder = keys })) .. "\n"
if arg[1] then
  local f = assert(io.open(arg[1], "w"))
  f:write(text)
  f:close()
else
  io.write(text)
end
