-- SPDX-License-Identifier: Apache-2.0
--- lib.clock: RFC 3339 timestamps <-> unix seconds, UTC, whole seconds: the framework's fc.clock
-- (clock.format(t) -> "YYYY-MM-DDTHH:MM:SSZ", clock.parse(s) -> unix seconds | nil; see
-- lua/fc/clock.lua), kept under this name for the policies that require it.
return require("fc.clock")
