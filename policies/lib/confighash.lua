-- SPDX-License-Identifier: Apache-2.0
--- lib.confighash: a short fingerprint of configuration files, for pod template annotations.
--
-- A Pod reads its ConfigMap files at start (Flink reads flink-conf.yaml and the log
-- configuration once), and Kubernetes does not restart Pods when a ConfigMap they mount
-- changes. A StatefulSet replaces its Pods when its pod template changes (apps/v1
-- StatefulSet RollingUpdate), so a template annotation that changes with the files restarts
-- exactly the Pods that read them.
local confighash = {}

--- The pod template annotation that carries the hash.
confighash.ANNOTATION = "flinkoperator.k8s.io/config-hash"

local OFFSET_BASIS = 0xcbf29ce484222325

--- confighash.fnv1a64(s [, h]) -> integer: FNV-1a 64 of the bytes of `s` (offset basis
-- 0xcbf29ce484222325, prime 0x100000001b3), continuing from `h` when given. Lua integers wrap
-- around modulo 2^64, the arithmetic FNV wants (so the result may print negative with %d).
function confighash.fnv1a64(s, h)
  h = h or OFFSET_BASIS
  for i = 1, #s do
    h = (h ~ s:byte(i)) * 0x100000001b3
  end
  return h
end

--- confighash.of(files, skip) -> "<16 hex digits>"
-- `files`: {file name = contents (string)}, e.g. a ConfigMap's `data`; `skip`: nil or a set
-- {file name = true} of files left out (the ones these Pods do not read). The hash covers every
-- other file's name and contents in byte order of the names, so it changes when a file is
-- added, removed or changed, and not when the table was built in another order.
function confighash.of(files, skip)
  local list = {}
  for name in pairs(files) do
    if not (skip and skip[name]) then list[#list + 1] = name end
  end
  table.sort(list)
  local h = OFFSET_BASIS
  for _, name in ipairs(list) do
    local contents = tostring(files[name])
    -- lengths first, so that no two different sets of files give the same byte stream
    h = confighash.fnv1a64(#name .. ":" .. name .. #contents .. ":" .. contents, h)
  end
  return string.format("%016x", h)
end

return confighash
