-- SPDX-License-Identifier: Apache-2.0
-- Unit tests of fc.quantity: Kubernetes resource quantities as integer bytes / millicores.
local quantity = require("fc.quantity")

describe("fc.quantity.bytes", function()
  local cases = {
    { "600M", 600000000 },
    { "1024Mi", 1073741824 },
    { "1Gi", 1073741824 },
    { "1.5Ki", 1536 },
    { "2Ti", 2199023255552 },
    { "1Pi", 1125899906842624 },
    { "7Ei", 8070450532247928832 },
    { "1k", 1000 },
    { "1G", 1000000000 },
    { "1T", 1000000000000 },
    { "1P", 1000000000000000 },
    { "1E", 1000000000000000000 },
    { "1e3", 1000 },
    { "1E3", 1000 },
    { "1e+3", 1000 },
    { "12e-1", 2 },         -- 1.2 bytes rounds up
    { "0.5", 1 },
    { ".5", 1 },
    { "1.", 1 },
    { "0", 0 },
    { "-0", 0 },
    { "000123", 123 },
    { "+1k", 1000 },
    { "-1k", -1000 },
    { "-1.5", -2 },         -- away from zero, as Quantity.Value()
    { "1500m", 2 },
    { "999m", 1 },
    { "1n", 1 },
    { "0.0000000000000000000000001", 1 },
    { "9223372036854775807", 9223372036854775807 },
    { 1024, 1024 },
    { 0.5, 1 },
  }
  for _, c in ipairs(cases) do
    it(string.format("%q -> %d", tostring(c[1]), c[2]), function()
      assert.are.equal(c[2], quantity.bytes(c[1]))
    end)
  end

  local bad = {
    { "", "empty quantity" },
    { "1K", 'unknown suffix "K"' },
    { "1ki", 'unknown suffix "ki"' },
    { "1MB", 'unknown suffix "MB"' },
    { "1e", 'unknown suffix "e"' },
    { "1e3Mi", 'unknown suffix "e3Mi"' },
    { "1.5.5", 'unknown suffix ".5"' },
    { " 1", "invalid number" },
    { "1 ", 'unknown suffix " "' },
    { "-", "invalid number" },
    { ".", "invalid number" },
    { "Mi", "invalid number" },
    { "abc", "invalid number" },
    { "1e1001", "exponent out of range" },
    { "8Ei", "value out of range" },
    { "1e19", "value out of range" },
    { "9223372036854775808", "too many significant digits" },
    { "1.00000000000000000001", "too many significant digits" },
    { true, "must be a string or number" },
    { {}, "must be a string or number" },
    { 0 / 0, "invalid number" },
  }
  for _, c in ipairs(bad) do
    it(string.format("rejects %q: %s", tostring(c[1]), c[2]), function()
      local v, err = quantity.bytes(c[1])
      assert.is_nil(v)
      assert.are.equal(c[2], err)
    end)
  end
end)

describe("fc.quantity.millicores", function()
  local cases = {
    { "200m", 200 }, { "1", 1000 }, { "0.5", 500 }, { "2.5", 2500 }, { "100u", 1 },
    { "1n", 1 }, { "0.0001", 1 }, { "1k", 1000000 }, { "1e-3", 1 }, { "-200m", -200 },
    { 2, 2000 }, { 0.1, 100 }, { 2.5, 2500 },
  }
  for _, c in ipairs(cases) do
    it(string.format("%q -> %d", tostring(c[1]), c[2]), function()
      assert.are.equal(c[2], quantity.millicores(c[1]))
    end)
  end
  it("fails beyond int64 millis", function()
    local v, err = quantity.millicores("1E")
    assert.is_nil(v)
    assert.are.equal("value out of range", err)
  end)
end)

describe("fc.quantity.parse and valid", function()
  it("keeps suffix and exponents", function()
    assert.are.same({ negative = false, digits = "15", exp10 = -1, exp2 = 10, suffix = "Ki" },
      quantity.parse("1.50Ki"))
    assert.are.same({ negative = true, digits = "6", exp10 = 8, exp2 = 0, suffix = "M" },
      quantity.parse("-600M"))
  end)
  it("valid() reports the reason", function()
    assert.is_true(quantity.valid("600M"))
    assert.are.same({ false, 'unknown suffix "Mb"' }, { quantity.valid("600Mb") })
  end)
end)

describe("fc.quantity formatting", function()
  it("to_mib floors", function()
    assert.are.equal(1024, quantity.to_mib(1073741824))
    assert.are.equal(572, quantity.to_mib(600000000))
    assert.are.equal(0, quantity.to_mib(1048575))
  end)
  it("flink_mib writes Flink's m (MiB) suffix", function()
    assert.are.equal("768m", quantity.flink_mib(805306368))
    assert.are.equal("572m", quantity.flink_mib(600000000))
  end)
  it("format_bytes picks the largest exact suffix", function()
    assert.are.equal("600Mi", quantity.format_bytes(629145600))
    assert.are.equal("1Gi", quantity.format_bytes(1073741824))
    assert.are.equal("1000", quantity.format_bytes(1000))
    assert.are.equal("1537", quantity.format_bytes(1537))
    assert.are.equal("0", quantity.format_bytes(0))
    assert.are.equal("600M", quantity.format_bytes(600000000, "decimal"))
    assert.are.equal("1500k", quantity.format_bytes(1500000, "decimal"))
    assert.are.equal("-2Ki", quantity.format_bytes(-2048))
  end)
  it("format_millicores", function()
    assert.are.equal("200m", quantity.format_millicores(200))
    assert.are.equal("2", quantity.format_millicores(2000))
    assert.are.equal("0", quantity.format_millicores(0))
  end)
  it("round-trips format_bytes through bytes", function()
    for _, b in ipairs({ 1, 1023, 1024, 629145600, 600000000, 3 * 2 ^ 40 // 1 }) do
      assert.are.equal(b, quantity.bytes(quantity.format_bytes(b)))
      assert.are.equal(b, quantity.bytes(quantity.format_bytes(b, "decimal")))
    end
  end)
end)
