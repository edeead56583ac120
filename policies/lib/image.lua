-- SPDX-License-Identifier: Apache-2.0
--- lib.image: the parts of a container image reference, as Kubernetes and the registries read
-- it (distribution/reference grammar, which Kubernetes' parsers.ParseImageName uses):
-- [registry[:port]/]path/name[:tag][@digest]. Used by defaults.lua (imagePullPolicy) and
-- lib.flinkconf (the Flink version). Pure; safe inside the policy sandbox.
local image = {}

--- image.parse(ref) -> {name=<last path component, without tag>, tag=<string or nil>,
--   digest=<string or nil>} for the image reference string `ref`. The tag is what follows
-- the last ':' after the last '/' (so "registry:5000/flink" has no tag: 5000 is a port),
-- before any "@digest" (everything after the first '@').
-- "registry:5000/team/flink:1.17@sha256:ab" -> {name="flink", tag="1.17", digest="sha256:ab"}.
function image.parse(ref)
  local at = ref:find("@", 1, true)
  local digest
  if at then ref, digest = ref:sub(1, at - 1), ref:sub(at + 1) end
  local last = ref:sub((ref:match("^.*()/") or 0) + 1)
  local name, tag = last:match("^(.*):([^:]*)$")
  return { name = name or last, tag = tag, digest = digest }
end

return image
