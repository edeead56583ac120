-- SPDX-License-Identifier: Apache-2.0
--- fc.clock: RFC 3339 timestamps <-> unix seconds, UTC, whole seconds; the one parser and
-- formatter of the framework (fc.reconcile, fc.flinkjob, fc.taskmanagers) and of the policies
-- (lib.clock is this module; policies may `require("fc.clock")`).
-- Kubernetes writes metav1.Time as RFC 3339 in UTC with second precision
-- ("2026-11-30T06:40:00Z"), metav1.MicroTime with a fraction ("2026-11-30T06:40:00.123456Z");
-- the status times of FlinkClusters and FlinkJobs are written in the first form.
-- Pure (string and math only, no os: no local time zone involved); safe in the policy sandbox.
local clock = {}

-- Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = (y >= 0 and y or y - 399) // 400
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = (153 * mp + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  return era * 146097 + doe - 719468
end

-- The date of day `z` since 1970-01-01 (civil_from_days): year, month 1-12, day 1-31.
local function civil_from_days(z)
  z = z + 719468
  local era = (z >= 0 and z or z - 146096) // 146097
  local doe = z - era * 146097
  local yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
  local mp = (5 * doy + 2) // 153
  local d = doy - (153 * mp + 2) // 5 + 1
  local m = mp < 10 and mp + 3 or mp - 9
  if m <= 2 then y = y + 1 end
  return y, m, d
end

--- clock.format(t) -> "YYYY-MM-DDTHH:MM:SSZ" (UTC) for unix seconds `t` (a number; its
-- fraction dropped: 1.9 is "1970-01-01T00:00:01Z"). Errors when `t` is not a number.
function clock.format(t)
  t = math.floor(t)
  local days = t // 86400
  local secs = t % 86400
  local y, m, d = civil_from_days(days)
  return string.format("%04d-%02d-%02dT%02d:%02d:%02dZ", y, m, d, secs // 3600, secs % 3600 // 60, secs % 60)
end

--- clock.parse(s) -> unix seconds (an integer) | nil when `s` is not an RFC 3339 date-time:
-- "YYYY-MM-DD" "T" (or "t", " ") "HH:MM:SS", an optional fraction ".d+" (dropped: whole
-- seconds), then "Z"/"z" or an offset "+hh:mm"/"-hh:mm" (applied: "...T08:40:00+02:00" is
-- "...T06:40:00Z"). Month 1-12, day 1-31, hour 0-23, minute 0-59, second 0-60 (a leap second
-- reads as the next minute's first); anything else (a missing zone, trailing text, a non-string)
-- is nil.
function clock.parse(s)
  if type(s) ~= "string" then return nil end
  local y, mo, d, h, mi, se, rest = s:match("^(%d%d%d%d)-(%d%d)-(%d%d)[Tt ](%d%d):(%d%d):(%d%d)(.*)$")
  if not y then return nil end
  rest = rest:gsub("^%.%d+", "")
  local offset
  if rest == "Z" or rest == "z" then
    offset = 0
  else
    local sign, oh, om = rest:match("^([+-])(%d%d):(%d%d)$")
    if not sign then return nil end
    offset = (tonumber(oh) * 3600 + tonumber(om) * 60) * (sign == "-" and -1 or 1)
  end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  h, mi, se = tonumber(h), tonumber(mi), tonumber(se)
  if mo < 1 or mo > 12 or d < 1 or d > 31 or h > 23 or mi > 59 or se > 60 then return nil end
  return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset
end

return clock
