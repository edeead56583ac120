-- a well-behaved chunk: framework modules allowed to policies load inside the sandbox
local quantity = require("fc.quantity")
local util = require("fc.util")
return { bytes = quantity.bytes("1Gi"), same = util.equal({ 1 }, { 1 }) }
