-- SPDX-License-Identifier: Apache-2.0
--- lib.trigger: the framework's trigger ids (fc.trigger: 32 lowercase hex, time then sequence),
-- for the policies that name a Flink operation of their own (lib.restsubmit's submission ids).
-- The savepoint trigger protocol itself is the framework's (fc.savepoints).
return require("fc.trigger")
