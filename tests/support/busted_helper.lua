-- SPDX-License-Identifier: Apache-2.0
--- The busted helper of tests/run.sh (--helper): `require("fc.host")` is the binary's policy
-- host, core/lhost.c, through fc.sandbox (build/lib/fc/sandbox.so, core/lua_sandbox.c), the one
-- sandbox every spec runs policies in. Raises when the module is not built (`make`).
-- One host serves the whole run; busted insulates each spec file's package.loaded, so the first
-- require of each file sets the host back to the defaults (policies/, 200 ms, 64 MiB): what one
-- file configured does not carry into the next.
local ok, sandbox = pcall(require, "fc.sandbox")
if not ok then
  error("tests/support/busted_helper.lua: fc.sandbox is not built (run make): " .. tostring(sandbox), 0)
end
local defaults = { policy_dir = (os.getenv("FC_ROOT") or ".") .. "/policies", timeout_ms = 200, memory_mib = 64 }
package.preload["fc.host"] = function()
  sandbox.configure(defaults)
  return sandbox
end
