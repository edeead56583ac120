-- SPDX-License-Identifier: Apache-2.0
--- lib.failure: a short, readable cause out of a Java failure text (a stack trace, the output
-- of `flink run`), for status.components.job.failureReason and the Events.
local failure = {}

--- failure.cause(text, max) -> string | nil
-- text: a Java exception text ("<class>: <message>\n\tat ...\nCaused by: <class>: <message>...").
-- The last "Caused by:" line (the root cause: Java prints the chain outermost first), else the
-- first non-blank line, trimmed and cut to `max` bytes (default 300, "..." at the end when cut).
-- nil for a text with nothing but blanks, or not a string.
function failure.cause(text, max)
  if type(text) ~= "string" then return nil end
  max = max or 300
  local cause
  for line in text:gmatch("[^\r\n]+") do
    if line:match("^%s*Caused by:") then cause = line end
  end
  cause = cause or text:match("[^\r\n]*%S[^\r\n]*")
  if not cause then return nil end
  cause = cause:gsub("^%s+", ""):gsub("%s+$", "")
  if #cause > max then cause = cause:sub(1, max - 3) .. "..." end
  return cause
end

return failure
