-- SPDX-License-Identifier: Apache-2.0
-- Specs of `flink-controller run` stopping (#bin: the binary from FC_BIN, so that the asan suite
-- reruns them under ASan+UBSan). The API server here accepts connections and never answers, so
-- every request (lists, watches, the Lease GET of leader election) stays in flight.
local fx = require("support.fixtures")
local quote = fx.quote

-- A listener that accepts and never answers, for `seconds`; returns its port and pid.
local function silent_server(dir, seconds)
  fx.write(dir .. "/silent.py", table.concat({
    "import os, socket, sys, time",
    "s = socket.socket()",
    "s.bind(('127.0.0.1', 0))",
    "s.listen(64)",
    "print(s.getsockname()[1], os.getpid(), flush=True)",
    "s.settimeout(0.2)",
    "held, end = [], time.time() + float(sys.argv[1])",
    "while time.time() < end:",
    "    try:",
    "        held.append(s.accept()[0])",
    "    except socket.timeout:",
    "        pass",
  }, "\n") .. "\n")
  local p = assert(io.popen("python3 " .. quote(dir .. "/silent.py") .. " " .. seconds .. " &"))
  local port, pid = (p:read("l") or ""):match("^(%d+) (%d+)$")
  p:close()
  return tonumber(port), pid
end

describe("flink-controller run #bin", function()
  it("stops a standby on SIGTERM while its Lease request is in flight: exit 0, nothing freed twice", function()
    local dir = fx.tmpdir()
    local port, pid = silent_server(dir, 15)
    assert.is_number(port)
    fx.write(dir .. "/kubeconfig", table.concat({
      "apiVersion: v1", "kind: Config",
      "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:" .. port .. "'}}]",
      "users: [{name: u, user: {token: t}}]",
      "contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]",
      "current-context: x" }, "\n") .. "\n")
    local cmd = "POD_NAMESPACE=default " .. quote(fx.BIN) .. " run --kubeconfig " .. quote(dir .. "/kubeconfig")
      .. " --leader-elect --health-addr 127.0.0.1:0 --metrics-addr 0 >" .. quote(dir .. "/out") .. " 2>&1 & c=$!; "
      -- SIGTERM once the elector runs (its first Lease GET goes out at once and never returns)
      .. "for _ in $(seq 200); do grep -q 'leader election. lease=' " .. quote(dir .. "/out")
      .. " && break; sleep 0.1; done; sleep 0.3; kill -TERM $c; wait $c; echo $?"
    local p = assert(io.popen(cmd))
    local code = p:read("l")
    p:close()
    os.execute("kill " .. pid .. " 2>/dev/null")
    local out = fx.read(dir .. "/out")
    os.execute("rm -rf " .. quote(dir))
    assert.equal("0", code, out)
    assert.truthy(out:find("info stopping signal=15 in_flight=0", 1, true), out)
    assert.falsy(out:find("AddressSanitizer"), out)
  end)
end)
