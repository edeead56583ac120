-- SPDX-License-Identifier: Apache-2.0
-- fc.clock (lua/fc/clock.lua): the one RFC 3339 parser and formatter of the framework
-- (fc.reconcile's status times, fc.flinkjob's deletion wait, fc.taskmanagers' pod ages) and of
-- the policies (lib.clock is it). Expected values are Python's calendar.timegm of the same dates.
local clock = require("fc.clock")

describe("fc.clock", function()
  it("formats unix seconds as RFC 3339 UTC, fractions dropped", function()
    assert.same({ "1970-01-01T00:00:00Z", "2000-02-29T00:00:00Z", "2026-11-30T06:40:00Z",
      "1969-12-31T23:59:59Z", "2100-03-01T00:00:00Z", "2024-12-31T23:59:59Z", "1970-01-01T00:00:01Z" },
      { clock.format(0), clock.format(951782400), clock.format(1796020800), clock.format(-1),
        clock.format(4107542400), clock.format(1735689599), clock.format(1.9) })
  end)

  it("parses Kubernetes' times (Z, whole seconds and MicroTime fractions) as UTC", function()
    assert.same({ 0, 951782400, 1796020800, -1, 4107542400, 1735689599 },
      { clock.parse("1970-01-01T00:00:00Z"), clock.parse("2000-02-29T00:00:00Z"),
        clock.parse("2026-11-30T06:40:00Z"), clock.parse("1969-12-31T23:59:59Z"),
        clock.parse("2100-03-01T00:00:00Z"), clock.parse("2024-12-31T23:59:59Z") })
    -- a fraction is dropped (whole seconds), whatever its length
    assert.same({ 1796020800, 1796020800, 1796020800 }, { clock.parse("2026-11-30T06:40:00.999999Z"),
      clock.parse("2026-11-30T06:40:00.5Z"), clock.parse("2026-11-30T06:40:00.123456789Z") })
    -- lower-case and space separators, as RFC 3339 section 5.6 allows
    assert.same({ 1796020800, 1796020800 }, { clock.parse("2026-11-30t06:40:00z"),
      clock.parse("2026-11-30 06:40:00Z") })
  end)

  it("applies offsets", function()
    assert.same({ 1796020800, 1796020800, 1796020800, 1796020800 },
      { clock.parse("2026-11-30T08:40:00+02:00"), clock.parse("2026-11-30T01:10:00-05:30"),
        clock.parse("2026-11-30T06:40:00+00:00"), clock.parse("2026-11-30T08:40:00.25+02:00") })
    -- across a day and a year
    assert.equal(1735689599, clock.parse("2025-01-01T00:59:59+01:00"))
  end)

  it("round-trips what it formats", function()
    for _, t in ipairs({ 0, 951782400, 1796020800, -1, 4107542400, 1735689599, 86399 }) do
      assert.equal(t, clock.parse(clock.format(t)))
    end
  end)

  it("answers nil for anything that is not an RFC 3339 date-time", function()
    local bad = { "", "yesterday", "2026-11-30", "2026-11-30T06:40:00", "2026-11-30T06:40Z",
      "2026-11-30T06:40:00ZZ", "2026-11-30T06:40:00Z trailing", "2026-11-30T06:40:00+0200",
      "2026-11-30T06:40:00+02", "2026-11-30T06:40:00.Z", "26-11-30T06:40:00Z", "2026-13-30T06:40:00Z",
      "2026-00-30T06:40:00Z", "2026-11-00T06:40:00Z", "2026-11-32T06:40:00Z", "2026-11-30T24:00:00Z",
      "2026-11-30T06:60:00Z", "2026-11-30T06:40:61Z", " 2026-11-30T06:40:00Z" }
    for _, s in ipairs(bad) do
      assert.is_nil(clock.parse(s), s)
    end
    assert.same({}, { clock.parse(nil), clock.parse(1796020800), clock.parse({}) })
  end)

  it("is lib.clock, the policies' module", function()
    assert.equal(clock, require("lib.clock"))
  end)
end)
