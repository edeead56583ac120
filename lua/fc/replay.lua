-- SPDX-License-Identifier: Apache-2.0
--- fc.replay: `flink-controller reconcile -f SNAPSHOT` (issue "Policy authoring", item 1): the
-- whole reconcile of one FlinkCluster from a recorded snapshot, offline. A snapshot is what the
-- controller hands fc.reconcile.run for a pass — {cluster, children, flink, now, dry_runs} —
-- as JSON or YAML; `run --debug-snapshot-dir DIR` writes the latest one of each cluster there
-- (DIR/<namespace>.<name>.json), so a surprising pass can be replayed and a policy change tried
-- on it.
local codec = require("fc.codec")
local reconcile = require("fc.reconcile")

local replay = {}

--- replay.run({text=<the snapshot file's text>, source=<its name>}) -> {code=0|1, stdout=<the
-- result as YAML: actions, status, events, requeue_after>, stderr={<lines>}}.
-- Code 1 (nothing on stdout) when the text is not one snapshot document with a `cluster`
-- mapping, or the framework itself fails; a policy failure is a result (PolicyError), code 0.
function replay.run(opts)
  local source = opts.source or "<snapshot>"
  local res = { code = 1, stdout = "", stderr = {} }
  local docs, err = codec.decode_documents(opts.text or "")
  if not docs then
    res.stderr[1] = source .. ": " .. err
    return res
  end
  local snapshot, found = nil, 0
  for _, d in ipairs(docs) do
    if d.error then
      res.stderr[#res.stderr + 1] = source .. ": document " .. d.index .. ": " .. d.error
      return res
    end
    if d.value ~= nil then
      found = found + 1
      snapshot = d.value
    end
  end
  if found ~= 1 or type(snapshot) ~= "table" or type(snapshot.cluster) ~= "table" then
    res.stderr[1] = source .. ": expected one snapshot: a mapping with `cluster` (and children, flink, now)"
    return res
  end
  local ok, result = pcall(reconcile.run, snapshot)
  if not ok then
    res.stderr[1] = source .. ": reconcile: " .. tostring(result)
    return res
  end
  local enc_ok, text = pcall(codec.encode_yaml, {
    actions = result.actions, status = result.status, events = result.events,
    requeue_after = result.requeue_after,
  })
  if not enc_ok then
    res.stderr[1] = source .. ": cannot encode the result: " .. tostring(text)
    return res
  end
  res.code, res.stdout = 0, text
  return res
end

return replay
