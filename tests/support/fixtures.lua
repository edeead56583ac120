-- SPDX-License-Identifier: Apache-2.0
--- support.fixtures: the helpers the busted specs (policies/*_spec.lua, tests/*_spec.lua) share:
-- files, YAML fixtures, fixture case directories, structural comparison, policies in the production
-- sandbox and running the binary. `require("support.fixtures")` (tests/run.sh puts tests/?.lua
-- on LUA_PATH). Paths are plain strings; functions raise (assert) on I/O errors unless they say
-- otherwise.
local lyaml = require("lyaml")
local yaml = require("yaml")
local lfs = require("lfs")
local util = require("fc.util")

local M = {}

--- The repository root (FC_ROOT, set by tests/run.sh; "." when run by hand from the root).
M.ROOT = os.getenv("FC_ROOT") or "."
--- The binary the #bin specs run: FC_BIN (tests/run.sh's asan suite sets the ASan build).
M.BIN = os.getenv("FC_BIN") or (M.ROOT .. "/build/flink-controller")
--- FC_UPDATE_FIXTURES: "1" makes the fixture specs rewrite every expected.yaml from the output
-- before comparing; a case name (e.g. "session-full") rewrites only the cases of that name.
M.UPDATE = os.getenv("FC_UPDATE_FIXTURES")
if M.UPDATE == "" or M.UPDATE == "0" then M.UPDATE = nil end

--- True when FC_UPDATE_FIXTURES asks to rewrite the expectation of case directory `dir`.
function M.updating(dir)
  if M.UPDATE == nil then return false end
  return M.UPDATE == "1" or dir:match("([^/]+)/*$") == M.UPDATE
end

--- `rel` (a path inside the repository) as a path from the root.
function M.path(rel)
  return M.ROOT .. "/" .. rel
end

--- The bytes of file `path`; raises when it cannot be read, or returns nil when `optional`.
function M.read(path, optional)
  local f, err = io.open(path, "rb")
  if not f then
    if optional then return nil end
    error(err, 2)
  end
  local s = f:read("a")
  f:close()
  return s
end

--- Writes `text` to `path` (replacing it).
function M.write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

--- True when `path` is an existing file (or directory) that can be opened.
function M.exists(path)
  local f = io.open(path, "r")
  if f then f:close() end
  return f ~= nil
end

function M.is_dir(path) return lfs.attributes(path, "mode") == "directory" end
function M.is_file(path) return lfs.attributes(path, "mode") == "file" end

--- `s` quoted for sh (single quotes).
function M.quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

--- A new empty directory (mktemp -d); the caller removes it.
function M.tmpdir()
  local p = assert(io.popen("mktemp -d"))
  local dir = p:read("l")
  p:close()
  assert(dir and dir ~= "", "mktemp -d failed")
  return dir
end

-- YAML ------------------------------------------------------------------------------------

--- `v` without YAML nulls (lyaml.null): a null map value becomes an absent key, as in the JSON
-- the API server keeps. Returns new tables; `v` is not changed.
function M.strip_null(v)
  if v == lyaml.null then return nil end
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = M.strip_null(x) end
  return out
end

--- The YAML document in file `path` as lyaml reads it (`~` stays lyaml.null); nil when
-- `optional` and the file does not exist.
function M.read_yaml(path, optional)
  local text = M.read(path, optional)
  if text == nil then return nil end
  return lyaml.load(text)
end

--- The YAML document in file `path` with its nulls dropped (M.strip_null).
function M.load_yaml(path)
  return M.strip_null(lyaml.load(M.read(path)))
end

--- YAML text of `value` as the fixtures are written: keys sorted, multi-line strings as
-- literal blocks, strings that would read back as another type (or not at all) single-quoted,
-- floats with 17 significant digits, lyaml.null as `~`, an empty table as `{}` (libyaml's
-- emitter through lyaml).
function M.emit_yaml(value)
  local e = yaml.emitter()
  local function scalar(v, style)
    e.emit({ type = "SCALAR", value = v, plain_implicit = true, quoted_implicit = true, style = style })
  end
  local function node(v)
    if v == lyaml.null then
      scalar("~", "PLAIN")
    elseif type(v) == "table" then
      if util.is_array(v) then
        e.emit({ type = "SEQUENCE_START", style = "BLOCK" })
        for _, x in ipairs(v) do node(x) end
        e.emit({ type = "SEQUENCE_END" })
      else
        e.emit({ type = "MAPPING_START", style = next(v) == nil and "FLOW" or "BLOCK" })
        for _, k in ipairs(util.sorted_keys(v)) do
          node(k)
          node(v[k])
        end
        e.emit({ type = "MAPPING_END" })
      end
    elseif type(v) == "string" then
      local ok, doc = pcall(lyaml.load, "v: " .. v .. "\n")
      if v:find("\n") then
        scalar(v, "LITERAL")
      elseif not ok or type(doc) ~= "table" or doc.v ~= v then
        scalar(v, "SINGLE_QUOTED")
      else
        scalar(v, "PLAIN")
      end
    elseif math.type(v) == "float" then
      scalar(string.format("%.17g", v), "PLAIN") -- reads back as the same double
    else
      scalar(tostring(v), "PLAIN")
    end
  end
  e.emit({ type = "STREAM_START", encoding = "UTF8" })
  e.emit({ type = "DOCUMENT_START" })
  node(value)
  e.emit({ type = "DOCUMENT_END" })
  local _, out = e.emit({ type = "STREAM_END" })
  return out
end

-- Comparison ------------------------------------------------------------------------------

--- nil when `a` and `b` are structurally equal, else "<path>: <a> ~= <b>" for the first
-- difference in sorted key order (path from "$", `.key` per level).
function M.first_diff(a, b, path)
  path = path or "$"
  if type(a) ~= "table" or type(b) ~= "table" then
    if a == b then return nil end
    return path .. ": " .. tostring(a) .. " ~= " .. tostring(b)
  end
  for _, k in ipairs(util.sorted_keys(util.merge(a, b))) do
    local d = M.first_diff(a[k], b[k], path .. "." .. tostring(k))
    if d then return d end
  end
  return nil
end

--- Partial match of an output `got` against an expectation `exp` (as read by M.read_yaml):
-- every key `exp` gives must match, a list must have as many items as `exp`'s, `{}` means
-- "empty or absent", `~` (lyaml.null) means "absent". nil when it matches, else
-- "<path>: <what differs>". The same rules as `flink-controller test` (fc.fixtures.mismatch).
function M.mismatch(exp, got, path)
  return require("fc.fixtures").mismatch(exp, got, path or "")
end

-- Fixture cases ---------------------------------------------------------------------------

--- Sorted names of the subdirectories of `dir` (hidden ones left out); {} when `dir` is not
-- a directory.
function M.subdirs(dir)
  local out = {}
  if not M.is_dir(dir) then return out end
  for entry in lfs.dir(dir) do
    if entry:sub(1, 1) ~= "." and M.is_dir(dir .. "/" .. entry) then out[#out + 1] = entry end
  end
  table.sort(out)
  return out
end

--- The directory of policy `policy`'s fixture cases: policies/testdata/<policy>.
function M.cases_dir(policy)
  return M.ROOT .. "/policies/testdata/" .. policy
end

--- The case names of policy `policy`: every directory under policies/testdata/<policy>/, sorted
-- (a new case directory is picked up without editing the spec).
function M.cases(policy)
  return M.subdirs(M.cases_dir(policy))
end

--- Asserts that the walked case list `found` holds every name of `want` (the cases a spec was
-- written for must not disappear unnoticed) and is not shorter.
function M.assert_cases(found, want)
  local have = {}
  for _, d in ipairs(found) do have[d] = true end
  for _, w in ipairs(want) do
    assert(have[w], "missing fixture case " .. w)
  end
  assert(#found >= #want, "fewer fixture cases than expected")
end

--- The expectation of case directory `dir` for the output `got`: when M.updating(dir)
-- (FC_UPDATE_FIXTURES) it first rewrites `dir/<opts.name>` (default expected.yaml) as
-- M.emit_yaml(got), the whole output (a partial expectation becomes a full one: trim it by hand
-- to the keys that matter); then the file is read (M.read_yaml, nulls kept, or M.load_yaml
-- when opts.strip). Raises when it does not exist.
function M.expected(dir, got, opts)
  opts = opts or {}
  local path = dir .. "/" .. (opts.name or "expected.yaml")
  if M.updating(dir) then M.write(path, M.emit_yaml(got)) end
  if opts.strip then return M.load_yaml(path) end
  return M.read_yaml(path)
end

--- Runs hook fixture case `case` of policy `policy` (job, savepoint, status) on `mod` (the
-- policy's table): policies/testdata/<policy>/<case>/input.yaml holds `hook` (the hook's name)
-- and `input` (its argument); expected.yaml is matched against `mod[hook](input)` by M.mismatch
-- (FC_UPDATE_FIXTURES=1 rewrites it from the output first). Returns nil when it matches, else
-- M.mismatch's text; raises when a file is missing or the hook raises.
function M.hook_case(policy, mod, case)
  local dir = M.cases_dir(policy) .. "/" .. case
  local input = M.read_yaml(dir .. "/input.yaml")
  local hook = mod[input.hook]
  if type(hook) ~= "function" then error(case .. ": no hook " .. tostring(input.hook) .. " in " .. policy, 2) end
  local out = hook(input.input)
  return M.mismatch(M.expected(dir, out), out, "")
end

-- Policies in the production sandbox --------------------------------------------------------

--- Policy `name` (<dir>/<name>.lua, dir = opts.dir or policies/) in the production host
-- (`require("fc.host")`: core/lhost.c through fc.sandbox, its budgets and plain-data copies):
-- a proxy whose `proxy.<hook>(input)` is `host.call(name, hook, input)`, returning the result
-- and raising the host's "<file>:<line>: <message>" when the call fails. Each call points the
-- host at `dir` first when it is elsewhere (host.configure: a new dir drops the loaded policies).
-- Members that are data, not hooks (`settings.JOB_LOST_AFTER_SECONDS`), are read from the policy loaded as
-- a plain module (`require(name)`, policies/ only: nil for another dir).
function M.sandboxed(name, opts)
  local host = require("fc.host")
  local dir = (opts and opts.dir) or (M.ROOT .. "/policies")
  local plain = dir == M.ROOT .. "/policies" and require(name) or {}
  return setmetatable({}, {
    __index = function(_, hook)
      local v = plain[hook]
      if v ~= nil and type(v) ~= "function" then return v end
      return function(input)
        if host.info().policy_dir ~= dir then host.configure({ policy_dir = dir }) end
        -- as the framework calls it (fc.contract: every documented input key present)
        local ok, res = require("fc.contract").call(host, name, hook, input)
        if not ok then error(res.message, 2) end
        return res
      end
    end,
    __newindex = function(_, k) error("fx.sandboxed: " .. name .. ": cannot set " .. tostring(k), 2) end,
  })
end

-- The binary ------------------------------------------------------------------------------

--- Runs the binary (M.BIN) with the argument list `args` and stdin from file `stdin` (default
-- /dev/null). Returns {code=<exit status>, stdout=, stderr=, ms=<wall milliseconds>,
-- cpu_ms=<user + system CPU milliseconds of the child, from the shell's `times`>}.
-- Time bounds are asserted on cpu_ms: the wall clock of a loaded CI machine says little;
-- `timeout 20` keeps a regression from hanging the suite (exit 124).
function M.run_bin(args, stdin)
  local out, err = os.tmpname(), os.tmpname()
  local q = {}
  for i, a in ipairs(args) do q[i] = M.quote(a) end
  local cmd = string.format("s=$(date +%%s%%N); %s %s >%s 2>%s <%s; rc=$?; e=$(date +%%s%%N); "
    .. "echo $rc $(( (e - s) / 1000000 )); times", "timeout 20 " .. M.quote(M.BIN), table.concat(q, " "), out, err,
    stdin and M.quote(stdin) or "/dev/null")
  local p = assert(io.popen(cmd))
  local line = p:read("l")
  p:read("l") -- the shell's own times
  local um, us, sm, ss = p:read("l"):match("(%d+)m([%d.]+)s (%d+)m([%d.]+)s")
  p:close()
  local code, ms = line:match("^(%d+) (%d+)$")
  local res = { code = tonumber(code), ms = tonumber(ms), stdout = M.read(out), stderr = M.read(err),
    cpu_ms = math.floor(((tonumber(um) + tonumber(sm)) * 60 + tonumber(us) + tonumber(ss)) * 1000) }
  os.remove(out)
  os.remove(err)
  return res
end

-- A live kube-apiserver ---------------------------------------------------------------------

--- The kubeconfig of a live API server for the #testenv specs: FC_KUBECONFIG, else the test
-- environment's build/testenv/kubeconfig when it exists; nil when neither.
function M.kubeconfig()
  local k = os.getenv("FC_KUBECONFIG")
  if k then return k end
  if M.exists(M.ROOT .. "/build/testenv/kubeconfig") then return M.ROOT .. "/build/testenv/kubeconfig" end
  return nil
end

--- kubectl(args) -> output, ok: runs kubectl ($TESTENV_KUBECTL or PATH) with M.kubeconfig()
-- and `args` (a shell fragment), 20 s request timeout; combined stdout+stderr, and whether it
-- exited 0. M.live() says whether an API server answers.
function M.kubectl(args)
  local cmd = (os.getenv("TESTENV_KUBECTL") or "kubectl") .. " --request-timeout=20s --kubeconfig="
    .. (M.kubeconfig() or "/nonexistent") .. " " .. args .. " 2>&1; echo \"exit=$?\""
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  local rc = out:match("exit=(%d+)%s*$")
  return (out:gsub("exit=%d+%s*$", "")), rc == "0"
end

--- True when M.kubeconfig() names an API server that answers /readyz.
function M.live()
  return M.kubeconfig() ~= nil and select(2, M.kubectl("get --raw /readyz"))
end

--- Applies deploy/crd.yaml with M.kubectl and waits until it is Established (raises if not).
function M.apply_crd()
  local out, ok = M.kubectl("apply -f " .. M.ROOT .. "/deploy/crd.yaml")
  assert(ok, out)
  out, ok = M.kubectl("wait --for=condition=Established --timeout=30s crd/flinkclusters.flinkoperator.k8s.io")
  assert(ok, out)
end

--- Writes `texts` (YAML documents) as one stream to a temporary file; returns its path.
function M.yaml_stream(texts)
  local tmp = os.tmpname()
  M.write(tmp, table.concat(texts, "\n---\n"))
  return tmp
end

return M
