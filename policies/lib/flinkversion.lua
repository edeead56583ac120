-- SPDX-License-Identifier: Apache-2.0
--- lib.flinkversion: which Flink version a FlinkCluster runs, for the choices that depend on
-- it (the configuration file and its form, the memory keys, the options Flink 2 removed, the
-- log4j syntax). Pure functions; used by lib.flinkconf, cluster.lua and validate.lua.
--
-- A version is a table {major = <integer>, minor = <integer>} or nil, which means unknown.
-- Where it comes from, first match wins:
--   1. spec.flinkVersion, in either spelling other operators use:
--        "1.20", "1.20.1", "2.3"   the Spotify fork of this API (FlinkClusterSpec.FlinkVersion,
--                                  "must match the version in the image")
--        "v1_20", "v2_0"           the Apache Flink Kubernetes operator (FlinkDeployment
--                                  spec.flinkVersion, enum FlinkVersion)
--   2. the image tag (flinkversion.of_image): "flink:2.3.0-java17" -> 2.3.
-- spec.flinkVersion is not defaulted from the image: the defaulted spec is hashed into the
-- cluster's revision, and a new default would make every existing job cluster an update.
local image_ref = require("lib.image")

local flinkversion = {}

--- flinkversion.parse(s) -> {major=, minor=} | nil: the version a spec.flinkVersion string
-- names ("1.20", "1.20.1", "v1_20", "V2_0"); nil when `s` is not a string of either form.
function flinkversion.parse(s)
  if type(s) ~= "string" then return nil end
  local major, minor = s:match("^(%d+)%.(%d+)$")
  if not major then major, minor = s:match("^(%d+)%.(%d+)%.%d+$") end
  if not major then major, minor = s:match("^[vV](%d+)_(%d+)$") end
  if not major then return nil end
  return { major = tonumber(major), minor = tonumber(minor) }
end

--- flinkversion.of_image(image) -> {major=, minor=} | nil, from the image reference's tag:
-- "flink:1.9.2" -> 1.9; "registry:5000/team/flink:1.17.1-scala_2.12-java11" -> 1.17;
-- "apache/flink:v1.12" -> 1.12. Tag and name as lib.image reads them (a registry port is not
-- a tag; a digest is dropped). nil (unknown) when there is no tag (= latest), when the tag
-- does not start with <major>.<minor> ("latest", "stable"), and when the repository name
-- (last path part) does not contain "flink": an application image such as "my-job:1.0.3" is
-- tagged with its own version, not Flink's.
function flinkversion.of_image(image)
  if type(image) ~= "string" then return nil end
  local ref = image_ref.parse(image)
  if not ref.tag or not ref.name:lower():find("flink", 1, true) then return nil end
  local major, minor = ref.tag:match("^[vV]?(%d+)%.(%d+)")
  if not major then return nil end
  return { major = tonumber(major), minor = tonumber(minor) }
end

--- flinkversion.of(spec) -> version | nil, source: the version of a (defaulted) FlinkCluster
-- spec and where it came from ("spec.flinkVersion" or "spec.image.name"). A flinkVersion that
-- does not parse is validate.lua's error; here it falls back to the image.
function flinkversion.of(spec)
  local v = flinkversion.parse(spec.flinkVersion)
  if v then return v, "spec.flinkVersion" end
  v = flinkversion.of_image(type(spec.image) == "table" and spec.image.name or nil)
  if v then return v, "spec.image.name" end
  return nil
end

--- flinkversion.at_least(v, major, minor) -> boolean: v >= major.minor. An unknown version
-- (nil) counts as new: current images are what people pull without a tag or build FROM, and
-- reading a version too old is the worse mistake (lib.flinkconf.memory_properties).
function flinkversion.at_least(v, major, minor)
  if v == nil then return true end
  return v.major > major or (v.major == major and v.minor >= minor)
end

--- flinkversion.known_at_least(v, major, minor) -> boolean: v >= major.minor for a known
-- version only (nil -> false): for what only a version known to be new may drop.
function flinkversion.known_at_least(v, major, minor)
  return v ~= nil and flinkversion.at_least(v, major, minor)
end

--- flinkversion.string(v) -> "1.20" | "unknown"
function flinkversion.string(v)
  if v == nil then return "unknown" end
  return string.format("%d.%d", v.major, v.minor)
end

return flinkversion
