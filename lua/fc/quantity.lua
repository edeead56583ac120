-- SPDX-License-Identifier: Apache-2.0
--- fc.quantity: Kubernetes resource quantities as exact integers.
--
-- Follows the grammar of k8s.io/apimachinery/pkg/api/resource (quantity.go):
--   <quantity> ::= <sign>? <digits> [ "." <digits>? ] <suffix>     (or "." <digits>)
--   <suffix>   ::= "" | n | u | m | k | M | G | T | P | E           (decimal SI, 10^-9 .. 10^18)
--               | Ki | Mi | Gi | Ti | Pi | Ei                     (binary SI, 2^10 .. 2^60)
--               | e<signed int> | E<signed int>                   (decimal exponent, "1e3" = 1000)
-- Case matters ("1K", "1ki", "1MB" are malformed); no spaces. "E" alone is exa (10^18).
-- Memory comes out in bytes and CPU in millicores, rounded up away from zero to a whole
-- unit as Quantity.Value() / MilliValue() do ("0.5" bytes -> 1, "0.1m" CPU -> 1).
-- Deviations from apimachinery, all stricter: at least one digit is required (Kubernetes
-- reads "-" and "." as 0), the significant digits must fit int64 (at most 19), and results must fit a Lua
-- integer (int64); these return errors instead of silently saturating.
-- Every function is pure and safe inside the policy sandbox.
local quantity = {}

local DECIMAL = { n = -9, u = -6, m = -3, [""] = 0, k = 3, M = 6, G = 9, T = 12, P = 15, E = 18 }
local BINARY = { Ki = 10, Mi = 20, Gi = 30, Ti = 40, Pi = 50, Ei = 60 }
local MAX = math.maxinteger
local MAX_DIGITS = 19
local MIB = 1048576

-- A Lua float as the shortest decimal text that reads back to the same float,
-- as a JSON/YAML number would have been written ("0.1", not "0.10000000000000001").
local function float_text(x)
  for prec = 15, 17 do
    local s = string.format("%." .. prec .. "g", x)
    if tonumber(s) == x then return s end
  end
  return string.format("%.17g", x)
end

--- quantity.parse(q) -> {negative=bool, digits=string, exp10=int, exp2=int, suffix=string}
--   | nil, reason
-- `q` is a string such as "1024Mi", "0.5", "1e3", or a Lua number (YAML/JSON `memory: 1024`).
-- The value is (-1 if negative) * digits * 10^exp10 * 2^exp2, `digits` without leading or
-- trailing zeros ("" for zero). Reasons: "must be a string or number", "empty quantity",
-- "invalid number", "unknown suffix \"<s>\"", "exponent out of range",
-- "too many significant digits".
function quantity.parse(q)
  local s
  if math.type(q) == "integer" then
    s = tostring(q)
  elseif math.type(q) == "float" then
    if q ~= q or q == math.huge or q == -math.huge then return nil, "invalid number" end
    s = float_text(q)
  elseif type(q) == "string" then
    s = q
  else
    return nil, "must be a string or number"
  end
  if s == "" then return nil, "empty quantity" end
  local sign, int, dot, frac, suffix = s:match("^([+-]?)(%d*)(%.?)(%d*)(.*)$")
  if not sign or (int == "" and frac == "") then return nil, "invalid number" end
  if dot == "" and frac ~= "" then return nil, "invalid number" end
  local exp10, exp2 = 0, 0
  if DECIMAL[suffix] then
    exp10 = DECIMAL[suffix]
  elseif BINARY[suffix] then
    exp2 = BINARY[suffix]
  else
    local e = suffix:match("^[eE]([+-]?%d+)$")
    if not e then return nil, string.format("unknown suffix %q", suffix) end
    local n = tonumber((e:gsub("^%+", "")))
    if not n or math.type(n) ~= "integer" or n > 1000 or n < -1000 then
      return nil, "exponent out of range"
    end
    exp10 = n
  end
  local digits = (int .. frac):gsub("^0+", "")
  exp10 = exp10 - #frac
  local stripped = digits:gsub("0+$", "")
  exp10 = exp10 + (#digits - #stripped)
  digits = stripped
  if digits == "" then exp10 = 0; exp2 = 0 end
  if #digits > MAX_DIGITS or (digits ~= "" and not math.tointeger(tonumber(digits))) then
    return nil, "too many significant digits"
  end
  return { negative = sign == "-" and digits ~= "", digits = digits, exp10 = exp10, exp2 = exp2,
           suffix = suffix }
end

-- x * f for non-negative integers, nil when the product overflows int64.
local function mul(x, f)
  if x ~= 0 and f > MAX // x then return nil end
  return x * f
end

-- base^n for n >= 0, nil on overflow.
local function pow(base, n)
  local r = 1
  for _ = 1, n do
    r = mul(r, base)
    if not r then return nil end
  end
  return r
end

-- ceil(|value| * 10^shift) of a parsed quantity, signed; nil, reason on overflow.
local function scaled(p, shift)
  if p.digits == "" then return 0 end
  local m = math.tointeger(tonumber(p.digits))
  local e10, e2 = p.exp10 + shift, p.exp2
  local v
  if e10 >= 0 then
    local f10, f2 = pow(10, e10), pow(2, e2)
    v = f10 and f2 and mul(m, f10)
    v = v and mul(v, f2)
  else
    -- m * 2^e2 / (2^d * 5^d): cancel the twos first so the numerator stays small.
    local d = -e10
    local c = math.min(e2, d)
    local p2 = pow(2, e2 - c)
    local num = p2 and mul(m, p2)
    if num == nil then return nil, "value out of range" end
    local den2, den5 = pow(2, d - c), pow(5, d)
    local den = den2 and den5 and mul(den2, den5)
    if den == nil then
      v = 1 -- the denominator exceeds any int64 numerator: 0 < value < 1, rounded up
    else
      v = num // den
      if num % den ~= 0 then v = v + 1 end
    end
  end
  if v == nil then return nil, "value out of range" end
  if p.negative then v = -v end
  return v
end

--- quantity.bytes(q) -> integer bytes | nil, reason
-- Memory/storage quantity in bytes, rounded up to a whole byte (Quantity.Value()).
-- "600M" -> 600000000, "1024Mi" -> 1073741824, "1e3" -> 1000, "1.5Ki" -> 1536.
-- Errors as quantity.parse, plus "value out of range" beyond int64.
function quantity.bytes(q)
  local p, err = quantity.parse(q)
  if not p then return nil, err end
  return scaled(p, 0)
end

--- quantity.millicores(q) -> integer millicores | nil, reason
-- CPU quantity in millicores, rounded up (Quantity.MilliValue()): "200m" -> 200,
-- "1" -> 1000, "0.5" -> 500, 2.5 (a YAML number) -> 2500, "1u" -> 1.
function quantity.millicores(q)
  local p, err = quantity.parse(q)
  if not p then return nil, err end
  return scaled(p, 3)
end

--- quantity.valid(q) -> true | false, reason: `q` parses and its value in whole units
-- (bytes) fits int64. millicores() can still overflow for values above ~9.2 * 10^15 ("1E").
function quantity.valid(q)
  local p, err = quantity.parse(q)
  if not p then return false, err end
  local v, e2 = scaled(p, 0)
  if not v then return false, e2 end
  return true
end

--- quantity.to_mib(bytes) -> integer MiB, rounded down (floor(bytes / 2^20)).
-- 1073741824 -> 1024; 600000000 -> 572.
function quantity.to_mib(bytes)
  return bytes // MIB
end

--- quantity.flink_mib(bytes) -> string: a size for flink-conf.yaml in MiB, floored.
-- Flink's MemorySize reads "m" as mebibytes (2^20), so 805306368 -> "768m".
function quantity.flink_mib(bytes)
  return string.format("%dm", bytes // MIB)
end

local BINARY_DESC = { { "Ei", 60 }, { "Pi", 50 }, { "Ti", 40 }, { "Gi", 30 }, { "Mi", 20 }, { "Ki", 10 } }
local DECIMAL_DESC = { { "E", 18 }, { "P", 15 }, { "T", 12 }, { "G", 9 }, { "M", 6 }, { "k", 3 } }

--- quantity.format_bytes(bytes [, style]) -> string
-- An integer byte count as a Kubernetes quantity with the largest suffix that divides it
-- exactly; style "binary" (default: Ki..Ei) or "decimal" (k..E).
-- 629145600 -> "600Mi"; 1000 -> "1000"; (600000000, "decimal") -> "600M"; 0 -> "0".
function quantity.format_bytes(bytes, style)
  if bytes == 0 then return "0" end
  local mag = bytes < 0 and -bytes or bytes
  local sign = bytes < 0 and "-" or ""
  if style == "decimal" then
    for _, s in ipairs(DECIMAL_DESC) do
      local f = pow(10, s[2])
      if mag % f == 0 then return string.format("%s%d%s", sign, mag // f, s[1]) end
    end
  else
    for _, s in ipairs(BINARY_DESC) do
      local f = 1 << s[2]
      if mag % f == 0 then return string.format("%s%d%s", sign, mag // f, s[1]) end
    end
  end
  return string.format("%d", bytes)
end

--- quantity.format_millicores(m) -> string: "200m" for 200, "2" for 2000, "0" for 0.
function quantity.format_millicores(m)
  if m % 1000 == 0 then return string.format("%d", m // 1000) end
  return string.format("%dm", m)
end

return quantity
